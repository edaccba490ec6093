import { createHash } from "node:crypto";
import { copyFile, cp, lstat, mkdir, readFile, readlink, rename, rm, rmdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { firstLine } from "../worktree/run-git";
import { landGit, landGitBytes, withIndex } from "./land-git";
import type { CheckoutMove, MoveChange, SavedFile } from "./move-record";

/**
 * Brings every path a cut-short move changes to one side, whatever a kill left there.
 *
 * The record holds each path's mode and blob id on both sides. A kill while git writes the
 * working tree leaves each of those paths in one of a few states: the version before, the
 * version after, nothing (git removed it, or had not yet made it), or a file git made and had
 * not finished writing (empty, or the first part of one side's content). All of these can be
 * rewritten from the object store without losing anything. Anything else at such a path was
 * written by someone else since (the person, their editor): it is moved out of the way into a
 * folder beside the index, never overwritten, and named to the person.
 *
 * The index is made from the checkout's own (git's index-only two-way merge: every entry that
 * is neither side's is refused), refreshed, and compared with the working tree in one pass
 * (`update-index --refresh`, `diff-files`); the paths not yet at the side are hashed in one
 * call (`hash-object --stdin-paths`), the few left compared with the blobs in one more
 * (`cat-file --batch`), the ones to remove removed, and the rest written in one
 * `checkout-index`. A last `diff-files` proves every path at the side. So finishing costs about
 * what one `read-tree -u` of the same change does, however many files git had written.
 */
export type Settled =
  | { ok: true }
  | {
      ok: false;
      /** Why not, in words. */
      cause: string;
      /** The paths still at neither side. */
      files: string[];
      /** What the paths of the move held when the landing looked: how many at each side, or neither. */
      seen?: Seen;
    };

/** How many of the move's paths held each side's version, or neither, when the landing looked. */
export interface Seen {
  before: number;
  after: number;
  neither: number;
}

type Look =
  | { kind: "absent" }
  | { kind: "blocked" }
  | { kind: "dir" }
  | { kind: "file"; size: number; oid?: string }
  | { kind: "link"; oid: string };

interface Entry {
  mode: string;
  oid: string;
}

const ABSENT = "000000";
const GITLINK = "160000";

export async function settleCheckout(
  move: CheckoutMove,
  side: "from" | "to",
  options: { id: string; save: (saved: SavedFile) => Promise<void> },
): Promise<Settled> {
  const changes = move.changes ?? [];
  const want = (change: MoveChange): Entry =>
    side === "to" ? { mode: change[3], oid: change[4] } : { mode: change[1], oid: change[2] };
  const [other, target] = side === "to" ? [move.from, move.to] : [move.to, move.from];

  await copyFile(move.index, move.next);
  const merged = await withIndex(move.holder, move.next, ["read-tree", "-m", "-i", other, target]);
  if (!merged.ok) {
    return {
      ok: false,
      cause: `its index holds entries of neither side, so it was changed while the landing was cut short (${firstLine(merged.stderr)})`,
      files: [],
    };
  }
  await withIndex(move.holder, move.next, ["update-index", "-q", "--refresh"]);
  const off = await differing(move);

  // The paths not already at the side, looked at.
  const pending = changes.filter((change) => {
    const entry = want(change);
    if (entry.mode === GITLINK) return false;
    return entry.mode === ABSENT || off.has(change[0]);
  });
  const looks = new Map<string, Look>();
  await Promise.all(pending.map(async (change) => looks.set(change[0], await look(move.holder, change))));
  await hashFiles(move, looks);
  const partial = await partlyWritten(move, pending, looks);

  const seen: Seen = { before: 0, after: 0, neither: 0 };
  const safe = (change: MoveChange): boolean => {
    const seenAt = looks.get(change[0]) as Look;
    if (seenAt.kind === "absent" || seenAt.kind === "blocked" || seenAt.kind === "dir") return true;
    const oid = seenAt.oid;
    return oid === change[2] || oid === change[4] || partial.has(change[0]);
  };
  const count = (change: MoveChange) => {
    const seenAt = looks.get(change[0]);
    if (!seenAt) {
      if (side === "to") seen.after += 1;
      else seen.before += 1;
      return;
    }
    const oid = seenAt.kind === "file" || seenAt.kind === "link" ? seenAt.oid : undefined;
    const absent = seenAt.kind === "absent" || seenAt.kind === "blocked";
    if ((absent && change[1] === ABSENT) || (oid !== undefined && oid === change[2])) seen.before += 1;
    else if ((absent && change[3] === ABSENT) || (oid !== undefined && oid === change[4])) seen.after += 1;
    else seen.neither += 1;
  };
  for (const change of changes) count(change);

  // Someone else's writing at a path the move changes: moved out of the way, never lost. At a
  // path the side does not have, when putting back, it is left where it is (it is not in
  // the way, and may well be a file of theirs that was there before).
  const savedRoot = join(dirname(move.index), `gstack-land-${options.id}-saved`);
  const putAside = async (path: string) => {
    if (!(await lstat(join(move.holder, path)).catch(() => undefined))) return;
    const at = await freeName(join(savedRoot, path));
    await options.save({ path, at });
    await mkdir(dirname(at), { recursive: true });
    await moveAway(join(move.holder, path), at);
  };
  const left = new Set<string>();
  for (const change of pending) {
    if (safe(change)) continue;
    if (want(change).mode === ABSENT && side === "from") {
      left.add(change[0]);
      continue;
    }
    await putAside(change[0]);
    looks.set(change[0], { kind: "absent" });
  }
  // A file that is not the move's, in the way of a folder the side needs: put aside too.
  const planned = new Set(changes.map((change) => change[0]));
  for (const change of pending) {
    if (looks.get(change[0])?.kind !== "blocked") continue;
    const blocker = await blockingAncestor(move.holder, change[0]);
    if (blocker && (!planned.has(blocker) || left.has(blocker))) {
      await putAside(blocker);
      left.delete(blocker);
    }
  }

  // Paths the side does not have: removed (each holds a version the object store keeps), then
  // the folders they leave empty, deepest first, as git does.
  const folders = new Set<string>();
  for (const change of pending) {
    if (want(change).mode !== ABSENT || left.has(change[0])) continue;
    const seenAt = looks.get(change[0]) as Look;
    if (seenAt.kind === "file" || seenAt.kind === "link")
      await rm(join(move.holder, change[0]), { force: true });
    if (seenAt.kind === "dir") folders.add(change[0]);
    for (let parent = dirname(change[0]); parent !== "."; parent = dirname(parent)) folders.add(parent);
  }
  for (const folder of [...folders].sort((a, b) => b.length - a.length)) {
    await rmdir(join(move.holder, folder)).catch(() => undefined);
  }

  // A folder where the side has a file: removed when empty, else (what is in it is not the
  // move's) put aside whole.
  const write: string[] = [];
  for (const change of pending) {
    if (want(change).mode === ABSENT) continue;
    write.push(change[0]);
    if ((looks.get(change[0]) as Look).kind !== "dir") continue;
    const path = join(move.holder, change[0]);
    if ((await lstat(path).catch(() => undefined))?.isDirectory()) {
      await rmdir(path).catch(async () => putAside(change[0]));
    }
  }
  // Submodules: git makes the folder and nothing in it.
  for (const change of changes) {
    if (
      want(change).mode === GITLINK &&
      !(await lstat(join(move.holder, change[0])).catch(() => undefined))
    ) {
      write.push(change[0]);
    }
  }

  if (write.length > 0) {
    const written = await withIndex(
      move.holder,
      move.next,
      ["checkout-index", "-f", "-u", "-z", "--stdin"],
      `${write.join("\0")}\0`,
    );
    if (!written.ok) {
      return {
        ok: false,
        cause: `git could not write the files: ${firstLine(written.stderr)}`,
        files: write,
        seen,
      };
    }
  }

  // Proof: every path of the move at the side (a path that must be absent, absent).
  const still = await differing(move);
  const wrong: string[] = [];
  for (const change of changes) {
    const entry = want(change);
    if (entry.mode === GITLINK) continue;
    if (entry.mode !== ABSENT) {
      if (still.has(change[0])) wrong.push(change[0]);
    } else if (!left.has(change[0])) {
      const there = await lstat(join(move.holder, change[0])).catch(() => undefined);
      if (there && !there.isDirectory()) wrong.push(change[0]);
    }
  }
  if (wrong.length > 0) {
    return {
      ok: false,
      cause: `${wrong.length === 1 ? "a file" : `${wrong.length} files`} still differed after git wrote them (${wrong.slice(0, 5).join(", ")}${wrong.length > 5 ? ", ..." : ""}): something else is writing there`,
      files: wrong,
      seen,
    };
  }
  return { ok: true };
}

/** Paths whose working-tree file differs from the private index (as `git diff-files` says). */
async function differing(move: CheckoutMove): Promise<Set<string>> {
  const out = await withIndex(move.holder, move.next, [
    "diff-files",
    "-z",
    "--name-only",
    "--ignore-submodules",
  ]);
  return new Set(out.stdout.split("\0").filter((path) => path.length > 0));
}

async function look(holder: string, change: MoveChange): Promise<Look> {
  const path = join(holder, change[0]);
  let info: Awaited<ReturnType<typeof lstat>>;
  try {
    info = await lstat(path);
  } catch (error) {
    return { kind: (error as NodeJS.ErrnoException).code === "ENOTDIR" ? "blocked" : "absent" };
  }
  if (info.isDirectory()) return { kind: "dir" };
  if (info.isSymbolicLink()) {
    return { kind: "link", oid: blobId(Buffer.from(await readlink(path, { encoding: "buffer" })), change) };
  }
  return { kind: "file", size: info.size };
}

/** A blob's id, in the repository's object format (told by the length of the ids it uses). */
function blobId(bytes: Buffer, change: MoveChange): string {
  const sha256 = (change[2].length === 64 ? change[2] : change[4]).length === 64;
  return createHash(sha256 ? "sha256" : "sha1")
    .update(`blob ${bytes.length}\0`)
    .update(bytes)
    .digest("hex");
}

/** Hashes every regular file looked at, in one `git hash-object` (its clean filters applied). */
async function hashFiles(move: CheckoutMove, looks: Map<string, Look>): Promise<void> {
  const files = [...looks].filter(([, seen]) => seen.kind === "file");
  const sample = move.changes?.[0];
  if (files.length === 0 || !sample) return;
  const out = await landGit(move.holder, ["hash-object", "--stdin-paths"], {
    input: `${files.map(([path]) => (path.includes("\n") ? "" : path)).join("\n")}\n`,
  });
  const ids = out.ok ? out.stdout.split("\n") : [];
  for (const [index, [path, seen]] of files.entries()) {
    if (seen.kind !== "file") continue;
    const id = ids[index];
    if (id && /^[0-9a-f]+$/.test(id)) seen.oid = id;
    else {
      // Git could not hash them all (a file gone meanwhile): the bytes as they are, unfiltered.
      const bytes = await readFile(join(move.holder, path)).catch(() => undefined);
      if (bytes) seen.oid = blobId(bytes, sample);
    }
  }
}

/**
 * The files that hold the first part of either side's version (a file git had made and not
 * finished writing when it was killed): the blobs are read in one `git cat-file --batch`.
 */
async function partlyWritten(
  move: CheckoutMove,
  pending: MoveChange[],
  looks: Map<string, Look>,
): Promise<Set<string>> {
  const partial = new Set<string>();
  const candidates: Array<{ change: MoveChange; size: number }> = [];
  for (const change of pending) {
    const seenAt = looks.get(change[0]);
    if (seenAt?.kind !== "file" || seenAt.oid === change[2] || seenAt.oid === change[4]) continue;
    if (seenAt.size === 0) partial.add(change[0]);
    else candidates.push({ change, size: seenAt.size });
  }
  if (candidates.length === 0) return partial;
  const wanted = new Set<string>();
  for (const { change } of candidates) {
    if (change[1] !== ABSENT && change[1] !== GITLINK) wanted.add(change[2]);
    if (change[3] !== ABSENT && change[3] !== GITLINK) wanted.add(change[4]);
  }
  const out = await landGitBytes(move.holder, ["cat-file", "--batch"], {
    input: `${[...wanted].join("\n")}\n`,
  });
  const blobs = new Map<string, Buffer>();
  for (let at = 0; at < out.stdout.length; ) {
    const end = out.stdout.indexOf(0x0a, at);
    if (end < 0) break;
    const header = out.stdout.subarray(at, end).toString().split(" ");
    at = end + 1;
    if (header[1] === "missing" || header.length < 3) continue;
    const size = Number(header[2]);
    blobs.set(header[0] as string, out.stdout.subarray(at, at + size));
    at += size + 1;
  }
  for (const { change, size } of candidates) {
    const sides = [blobs.get(change[2]), blobs.get(change[4])].filter(
      (blob): blob is Buffer => blob !== undefined && blob.length > size,
    );
    if (sides.length === 0) continue;
    const bytes = await readFile(join(move.holder, change[0])).catch(() => undefined);
    if (bytes && sides.some((blob) => blob.subarray(0, bytes.length).equals(bytes))) partial.add(change[0]);
  }
  return partial;
}

/** The nearest folder above `path` that is not a folder (a file or link in the way). */
async function blockingAncestor(holder: string, path: string): Promise<string | undefined> {
  const parts = path.split("/");
  for (let length = 1; length < parts.length; length += 1) {
    const prefix = parts.slice(0, length).join("/");
    const info = await lstat(join(holder, prefix)).catch(() => undefined);
    if (!info) return undefined;
    if (!info.isDirectory()) return prefix;
  }
  return undefined;
}

/** `path`, or `path.1`, `path.2` ... : the first that does not exist yet. */
async function freeName(path: string): Promise<string> {
  for (let suffix = 0; ; suffix += 1) {
    const candidate = suffix === 0 ? path : `${path}.${suffix}`;
    if (!(await lstat(candidate).catch(() => undefined))) return candidate;
  }
}

/** Moves a file or folder; across file systems, copies it and then removes the original. */
async function moveAway(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EXDEV") throw error;
    await cp(from, to, { recursive: true, preserveTimestamps: true, verbatimSymlinks: true });
    await rm(from, { recursive: true, force: true });
  }
}

/**
 * What the person is told when a checkout could not be brought to either side: where it
 * stands, that the landing keeps the lock, and the git commands that put it back by hand.
 */
export function describeHalfWay(
  move: CheckoutMove,
  id: string,
  side: "from" | "to",
  cause: string,
  settled: Extract<Settled, { ok: false }>,
  at: string,
): string {
  const short = (sha: string) => sha.slice(0, 12);
  const where =
    at === move.from
      ? `${move.branch} is still at ${short(move.from)} (before the landing)`
      : at === move.to
        ? `${move.branch} is at ${short(move.to)} (landed)`
        : `${move.branch} is at ${short(at)}`;
  const seen = settled.seen
    ? `; of the ${settled.seen.before + settled.seen.after + settled.seen.neither} files the landing changes, ${settled.seen.before} held their version from before it, ${settled.seen.after} the landed one and ${settled.seen.neither} neither`
    : "";
  const saved = (move.saved ?? []).map((entry) => `${entry.path} is at ${entry.at}`);
  const git = `git -C ${move.holder}`;
  return [
    `a landing of ${id} into ${move.branch} in ${move.holder} was cut short and could not be ${side === "to" ? "finished" : "put back"} (${cause}): ${settled.cause}.`,
    ` The checkout is half-way between ${short(move.from)} and ${short(move.to)}: ${where}${seen}.`,
    saved.length > 0
      ? ` Files someone else had changed at its paths were moved out of the way, not lost: ${saved.join("; ")}.`
      : "",
    ` The landing keeps ${move.lock}, so no git command works on the half-written files, and tries again when you land ${id} again and at the daemon's next start.`,
    ` To put the checkout back as it was by hand instead (this overwrites the files the landing changes): rm -f ${move.lock} ${move.owner} && ${git} read-tree --reset -u ${move.to} && ${git} read-tree --reset -u ${move.from} && ${git} update-ref refs/heads/${move.branch} ${move.from}.`,
    ` Or to finish it by hand: rm -f ${move.lock} ${move.owner} && ${git} read-tree --reset -u ${move.to} && ${git} update-ref refs/heads/${move.branch} ${move.to}, then land ${id} again to record it.`,
  ].join("");
}
