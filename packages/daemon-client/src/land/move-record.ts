import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { type GstackLayout, writeFileAtomic } from "@gstack/contracts";

/**
 * The record of a landing's move of a checked-out branch (`sessions/{id}/landing-move.json`):
 * what `checkout-move.ts` writes before it touches the checkout, and what a landing cut short
 * is finished from.
 */
export interface CheckoutMove {
  /** The checkout holding the branch. */
  holder: string;
  /** The branch, without `refs/heads/`. */
  branch: string;
  from: string;
  to: string;
  how: "fast-forward" | "merge";
  /** The checkout's index, its lock, and the landing's own files beside them. */
  index: string;
  lock: string;
  owner: string;
  next: string;
  /** Device and inode of `owner`, written down before it became the lock. */
  owned?: { dev: number; ino: number };
  /**
   * Every path the move changes: `[path, mode before, blob before, mode after, blob after]`, a
   * side without the path as mode `000000`. Written before the lock is taken (a record of an
   * older daemon without it has it read again from the two commits, which give the same list).
   */
  changes?: MoveChange[];
  /** Set once the landing gives the move up: the checkout is (being) put back as it was. */
  back?: true;
  /** Versions of files found at the move's paths that were neither side's, and where each went. */
  saved?: SavedFile[];
  /** What was said to the person when the checkout could not be brought to either side. */
  stuck?: string;
  /** Set once the checkout, index and branch are at `to` (the lock is let go next). */
  done?: boolean;
}

/** One path a move changes, with its entry before and after (`000000` where there is none). */
export type MoveChange = [path: string, fromMode: string, fromOid: string, toMode: string, toOid: string];

/** A version of a file the landing moved out of the way instead of overwriting it. */
export interface SavedFile {
  path: string;
  /** Where it is now. */
  at: string;
}

function moveFile(layout: GstackLayout, id: string): string {
  return join(layout.dispatch.sessionDir(id), "landing-move.json");
}

/** The move a landing of `id` began and has not yet recorded as landed, if any. */
export async function readMove(layout: GstackLayout, id: string): Promise<CheckoutMove | undefined> {
  try {
    return JSON.parse(await readFile(moveFile(layout, id), "utf8")) as CheckoutMove;
  } catch {
    return undefined;
  }
}

export async function saveMove(layout: GstackLayout, id: string, move: CheckoutMove): Promise<void> {
  await writeFileAtomic(moveFile(layout, id), `${JSON.stringify(move)}\n`);
}

/** Forgets the move once the landing's record holds its outcome. */
export async function forgetMove(layout: GstackLayout, id: string): Promise<void> {
  await rm(moveFile(layout, id), { force: true });
}

/** The name of the file that proves a landing's index lock, beside the checkout's index. */
export function ownerName(id: string): string {
  return `gstack-land-${id}.owner`;
}

/** The dispatch whose landing an owner file beside an index belongs to, if it is one. */
export function ownerOf(name: string): string | undefined {
  return /^gstack-land-(.+)\.owner$/.exec(name)?.[1];
}
