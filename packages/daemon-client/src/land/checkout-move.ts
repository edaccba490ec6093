import { copyFile, link, lstat, open, rename, rm } from "node:fs/promises";
import { dirname, isAbsolute, join, resolve } from "node:path";
import type { GstackLayout } from "@gstack/contracts";
import { firstLine, runGit } from "../worktree/run-git";
import { landGit, withIndex } from "./land-git";
import {
  type CheckoutMove,
  forgetMove,
  type MoveChange,
  ownerName,
  readMove,
  type SavedFile,
  saveMove,
} from "./move-record";
import { describeHalfWay, settleCheckout } from "./settle-checkout";

export { landGit } from "./land-git";
export type { CheckoutMove, SavedFile } from "./move-record";
export { forgetMove, ownerOf, readMove } from "./move-record";

/**
 * Moving a branch that is checked out somewhere (the person's own checkout, usually) from one
 * commit to a descendant, so that a landing killed at any instant is later finished, or put
 * back, to exactly one side: the checkout as it was, or as the landing makes it.
 *
 * `git merge --ff-only` would do the move, but a kill while it writes the working tree leaves
 * `index.lock` behind, and nothing tells that lock apart from one a person's own git holds. So
 * the landing takes the checkout's index lock itself, the way git does (create it exclusively),
 * but as a second name of a file it made first and wrote down (device and inode) beforehand:
 * a lock with that inode, while that first file still exists, can only be this landing's.
 *
 * Before the lock is taken, the record (`sessions/{id}/landing-move.json`) holds every path the
 * move changes with its mode and blob id on both sides (`git diff-tree`). Git checks every
 * file (`read-tree -n`) and then updates the working tree into a private index
 * (`read-tree -m -u`), the index is renamed into place, the branch moved with `update-ref`
 * against its old value, the record marked done and the lock let go. The lock is let go only
 * when the checkout is at one side, so no git of the person's ever works on a half-written
 * one; what a cut-short move left is brought to a side by `resumeCheckoutMove`
 * (`settle-checkout.ts`), path by path from the record.
 */

/** Why a move could not be made; see the message for what the checkout holds. */
export class MoveRefused extends Error {
  constructor(
    readonly rule: "locked" | "git" | "moved" | "unfinished",
    message: string,
    readonly files: string[] = [],
  ) {
    super(message);
    this.name = "MoveRefused";
  }
}

/** A move that got through: what it had to save of the person's on the way. */
export interface MoveOutcome {
  move: CheckoutMove;
  saved: SavedFile[];
}

/** The folder holding a checkout's index (and the landing's own files beside it). */
export async function indexFolder(holder: string): Promise<string> {
  return dirname(await indexPath(holder));
}

/**
 * Moves `branch`, checked out in `holder`, from `from` to its descendant `to`: working tree,
 * index and branch. Refuses (changing nothing) when the index is locked by anyone else or when
 * git would overwrite a file it should not. Git failing part-way (a full disk, a filter that
 * fails) puts the checkout back as it was before refusing.
 */
export async function moveCheckedOutBranch(
  layout: GstackLayout,
  id: string,
  target: MoveTarget,
): Promise<MoveOutcome> {
  const move = await takeCheckout(layout, id, target);
  const index = move.index;
  await copyFile(index, move.next);
  await withIndex(move.holder, move.next, ["update-index", "-q", "--refresh"]);
  // Git checks every file it would write (changed since the index, untracked in the way)
  // without writing any: a refusal here has changed nothing.
  const checked = await withIndex(move.holder, move.next, [
    "read-tree",
    "-n",
    "-m",
    "-u",
    move.from,
    move.to,
  ]);
  if (!checked.ok) {
    await giveUp(layout, id, move);
    const files = [...checked.stderr.matchAll(/^\t(.+)$/gm), ...checked.stderr.matchAll(/'([^']+)'/g)].map(
      (match) => match[1] as string,
    );
    throw new MoveRefused(
      "git",
      `could not bring the work into ${move.branch} in ${move.holder}: ${firstLine(checked.stderr)}${files.length > 0 ? ` (${[...new Set(files)].join(", ")})` : ""}; nothing was changed`,
      [...new Set(files)],
    );
  }
  const updated = await withIndex(move.holder, move.next, ["read-tree", "-m", "-u", move.from, move.to]);
  if (!updated.ok) {
    // Git stopped part-way through the files (a full disk, a filter that failed, a signal):
    // what it wrote is put back.
    const cause = firstLine(updated.stderr) || `git read-tree exited ${updated.code}`;
    await putBack(layout, id, move, `git stopped while it wrote the files: ${cause}`);
    await giveUp(layout, id, move);
    throw new MoveRefused(
      "git",
      `could not bring the work into ${move.branch} in ${move.holder}: ${cause}; the files git had written were put back, so the checkout is as it was`,
    );
  }
  await rename(move.next, move.index);
  await moveBranch(layout, id, move);
  return finish(layout, id, move);
}

/** What a move is asked to do: move `branch`, checked out in `holder`, from `from` to `to`. */
export interface MoveTarget {
  holder: string;
  branch: string;
  from: string;
  to: string;
  how: "fast-forward" | "merge";
}

/**
 * The first steps of a move, before anything in the checkout changes: the record (with every
 * path the move changes), the owner file written down, and the index lock taken as its second
 * name. A kill from here on is what `resumeCheckoutMove` finishes (the benchmark starts there).
 */
export async function takeCheckout(
  layout: GstackLayout,
  id: string,
  target: MoveTarget,
): Promise<CheckoutMove> {
  const index = await indexPath(target.holder);
  const folder = dirname(index);
  const move: CheckoutMove = {
    ...target,
    index,
    lock: `${index}.lock`,
    owner: join(folder, ownerName(id)),
    next: join(folder, `gstack-land-${id}.index`),
    changes: await readChanges(target.holder, target.from, target.to),
  };
  await saveMove(layout, id, move);
  await rm(move.owner, { force: true });
  await dropPrivateIndex(move);
  const handle = await open(move.owner, "wx", 0o644);
  const info = await handle.stat();
  await handle.close();
  move.owned = { dev: info.dev, ino: info.ino };
  await saveMove(layout, id, move);
  await takeLock(layout, id, move, "first");
  return move;
}

/**
 * Finishes (or, when the checkout's branch moved since, puts back) a move a crash cut short,
 * so that the checkout is exactly at one side, removing the index lock only when it is
 * provably this landing's. Returns the move when the branch now stands where the landing meant
 * it to, undefined when the landing should start over (nothing of it is left in the checkout).
 * When the checkout cannot be brought to either side, throws `unfinished` saying what it holds
 * and how to put it back by hand, and keeps both the record and the lock.
 */
export async function resumeCheckoutMove(layout: GstackLayout, id: string): Promise<MoveOutcome | undefined> {
  const move = await readMove(layout, id);
  if (!move) return undefined;
  if (move.done) {
    await release(move);
    return { move, saved: move.saved ?? [] };
  }
  if (!move.owned) {
    // Killed before the lock could be taken: nothing of the move is in the checkout.
    await rm(move.owner, { force: true });
    await dropPrivateIndex(move);
    await forgetMove(layout, id);
    return undefined;
  }
  move.changes ??= await readChanges(move.holder, move.from, move.to);
  if (!(await ownsLock(move))) {
    if (!(await lstat(move.owner).catch(() => undefined))) {
      // The landing let go of the lock itself, which it does only with the checkout at one
      // side: the branch says which.
      await dropPrivateIndex(move);
      if ((await branchAt(move)) === move.to) return markDone(layout, id, move);
      await forgetMove(layout, id);
      return undefined;
    }
    if (![move.from, move.to].includes(await branchAt(move))) {
      // Someone removed the lock and moved the branch: the checkout is theirs now, left as it is.
      await release(move);
      await forgetMove(layout, id);
      throw new MoveRefused(
        "moved",
        `${move.branch} moved to ${(await branchAt(move)).slice(0, 12)} after a landing was cut short and its index lock removed; the checkout was left as it is: land again to bring the work in from there`,
      );
    }
    // The lock was removed while the move was cut short (or a kill came just before it was
    // taken): the landing takes it again, unless someone else holds it now.
    await takeLock(layout, id, move, "again");
  }
  const at = await branchAt(move);
  if (at === move.to || (at === move.from && !move.back)) {
    await settleOrStuck(layout, id, move, "to", "a landing was cut short");
    await rename(move.next, move.index);
    if (at === move.from) await moveBranch(layout, id, move);
    return finish(layout, id, move);
  }
  // The landing was giving the move up, or the branch moved under it: put back.
  await putBack(
    layout,
    id,
    move,
    at === move.from
      ? "the landing was putting the checkout back"
      : `${move.branch} moved to ${at.slice(0, 12)}`,
  );
  await giveUp(layout, id, move);
  if (at === move.from) return undefined;
  throw new MoveRefused(
    "moved",
    `${move.branch} moved to ${at.slice(0, 12)} while a landing was cut short; the files it had written were put back: land again to bring the work in from there`,
  );
}

/** Index and branch at `to`: the record says so, then the lock is let go. */
async function finish(layout: GstackLayout, id: string, move: CheckoutMove): Promise<MoveOutcome> {
  const outcome = await markDone(layout, id, move);
  await release(move);
  return outcome;
}

async function markDone(layout: GstackLayout, id: string, move: CheckoutMove): Promise<MoveOutcome> {
  // A file is written down as saved before it is moved: one a kill stopped short of moving
  // was found again (and saved again) by the next attempt.
  const saved: SavedFile[] = [];
  for (const entry of move.saved ?? []) if (await lstat(entry.at).catch(() => undefined)) saved.push(entry);
  const done: CheckoutMove = { ...move, done: true, saved };
  delete done.stuck;
  await saveMove(layout, id, done);
  return { move: done, saved };
}

/**
 * The landing gives the move up, with the checkout as it was: the record says so before the
 * lock is let go (a kill in between finds a move it must not finish), then it is forgotten.
 */
async function giveUp(layout: GstackLayout, id: string, move: CheckoutMove): Promise<void> {
  if (!move.back) {
    move.back = true;
    await saveMove(layout, id, move);
  }
  await release(move);
  await forgetMove(layout, id);
}

/** Puts the checkout's files and index back at `from` (the branch is not touched). */
async function putBack(layout: GstackLayout, id: string, move: CheckoutMove, cause: string): Promise<void> {
  if (!move.back) {
    move.back = true;
    await saveMove(layout, id, move);
  }
  await settleOrStuck(layout, id, move, "from", cause);
  await rename(move.next, move.index);
}

/**
 * Brings every path of the move to `side`'s version; when it cannot, records what it told the
 * person and throws `unfinished` (keeping the lock: no git of theirs works on a half-way
 * checkout until the landing or they put it right).
 */
async function settleOrStuck(
  layout: GstackLayout,
  id: string,
  move: CheckoutMove,
  side: "from" | "to",
  cause: string,
): Promise<void> {
  await dropPrivateIndex(move);
  const settled = await settleCheckout(move, side, {
    id,
    save: async (saved) => {
      move.saved = [...(move.saved ?? []), saved];
      await saveMove(layout, id, move);
    },
  });
  if (settled.ok) return;
  const message = describeHalfWay(move, id, side, cause, settled, await branchAt(move));
  move.stuck = message;
  await saveMove(layout, id, move);
  await dropPrivateIndex(move);
  throw new MoveRefused("unfinished", message, settled.files);
}

/** Moves the branch from `from` to `to` against its old value; a branch moved since puts back. */
async function moveBranch(layout: GstackLayout, id: string, move: CheckoutMove): Promise<void> {
  const moved = await landGit(
    move.holder,
    ["update-ref", "-m", `gstack land: ${move.how}`, `refs/heads/${move.branch}`, move.to, move.from],
    { detached: true },
  );
  // A git of an earlier landing that outlived its daemon may have moved it just now.
  if (moved.ok || (await settledAt(move)) === move.to) return;
  // The branch moved under us: put the index and working tree back as they were.
  await putBack(layout, id, move, `${move.branch} moved while the work was brought in`);
  await giveUp(layout, id, move);
  throw new MoveRefused(
    "moved",
    `${move.branch} moved while the work was brought in (${firstLine(moved.stderr)}); the checkout was put back as it was: land again`,
  );
}

/**
 * Links the owner file as the index lock. Someone else's lock refuses: at the first taking,
 * with the record forgotten (nothing was changed); taken again after a cut-short move, with the
 * record and owner kept (the move is finished once that lock is gone).
 */
async function takeLock(
  layout: GstackLayout,
  id: string,
  move: CheckoutMove,
  when: "first" | "again",
): Promise<void> {
  try {
    await link(move.owner, move.lock);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    if (when === "first") {
      await rm(move.owner, { force: true });
      await forgetMove(layout, id);
      throw lockedRefusal(move, "nothing was changed");
    }
    throw lockedRefusal(
      move,
      `a landing of this work was cut short there and may have written part of it; it is finished once that lock is gone`,
    );
  }
}

/**
 * Removes the landing's private index and the lock git takes on it: both are named for this
 * dispatch and only its landing (under the dispatch's landing lock) ever uses them.
 */
async function dropPrivateIndex(move: CheckoutMove): Promise<void> {
  await rm(`${move.next}.lock`, { force: true });
  await rm(move.next, { force: true });
}

/** Lets go of the index lock (it is ours), then of the file that proved it. */
async function release(move: CheckoutMove): Promise<void> {
  await dropPrivateIndex(move);
  if (await ownsLock(move)) await rm(move.lock, { force: true });
  // Only now: while `owner` exists its inode cannot be given to anyone else's lock.
  await rm(move.owner, { force: true });
}

/** The index lock is this landing's: it is the very file written down, and that file still exists. */
async function ownsLock(move: CheckoutMove): Promise<boolean> {
  if (!move.owned) return false;
  const [lock, owner] = await Promise.all([
    lstat(move.lock).catch(() => undefined),
    lstat(move.owner).catch(() => undefined),
  ]);
  if (!lock || !owner) return false;
  return (
    lock.dev === move.owned.dev &&
    lock.ino === move.owned.ino &&
    owner.dev === move.owned.dev &&
    owner.ino === move.owned.ino
  );
}

function lockedRefusal(move: CheckoutMove, state: string): MoveRefused {
  return new MoveRefused(
    "locked",
    `the index of ${move.holder} is locked (${move.lock} exists): a git command is running there, or one that crashed left it; ${state}. Once no git is running there, remove ${move.lock} and land again`,
    [move.lock],
  );
}

/** Where the branch stands, given a second to become `move.to` (a git still finishing). */
async function settledAt(move: CheckoutMove): Promise<string> {
  for (let waited = 0; ; waited += 50) {
    const at = await branchAt(move);
    if (at === move.to || waited >= 1_000) return at;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function branchAt(move: CheckoutMove): Promise<string> {
  const out = await runGit(move.holder, ["rev-parse", "--verify", "--quiet", `refs/heads/${move.branch}`]);
  return out.stdout.trim();
}

/** Every path that differs between two commits, with its mode and blob id on each side. */
async function readChanges(holder: string, from: string, to: string): Promise<MoveChange[]> {
  const out = await runGit(holder, [
    "diff-tree",
    "-r",
    "-z",
    "--no-renames",
    "--raw",
    "--full-index",
    from,
    to,
  ]);
  if (!out.ok) throw new MoveRefused("git", `git diff-tree in ${holder}: ${firstLine(out.stderr)}`);
  const fields = out.stdout.split("\0");
  const changes: MoveChange[] = [];
  for (let at = 0; at + 1 < fields.length; at += 2) {
    const match = /^:(\d{6}) (\d{6}) ([0-9a-f]+) ([0-9a-f]+) [A-Z]/.exec(fields[at] as string);
    if (!match) continue;
    changes.push([
      fields[at + 1] as string,
      match[1] as string,
      match[3] as string,
      match[2] as string,
      match[4] as string,
    ]);
  }
  return changes;
}

async function indexPath(holder: string): Promise<string> {
  const out = await runGit(holder, ["rev-parse", "--git-path", "index"]);
  if (!out.ok) throw new MoveRefused("git", `git rev-parse in ${holder}: ${firstLine(out.stderr)}`);
  const path = out.stdout.trim();
  return isAbsolute(path) ? path : resolve(holder, path);
}
