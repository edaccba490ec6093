import { spawn } from "node:child_process";
import { copyFile, link, lstat, open, readFile, rename, rm } from "node:fs/promises";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { type GstackLayout, writeFileAtomic } from "@gstack/contracts";
import { firstLine, type GitOutput, runGit } from "../worktree/run-git";

/**
 * Moving a branch that is checked out somewhere (the person's own checkout, usually) from one
 * commit to a descendant, so that a landing killed at any instant can be finished or undone
 * later without ever removing a lock someone else holds.
 *
 * `git merge --ff-only` would do the move, but a kill while it writes the working tree leaves
 * `index.lock` behind, and nothing tells that lock apart from one a person's own git holds. So
 * the landing takes the checkout's index lock itself, the way git does (create it exclusively),
 * but as a second name of a file it made first and wrote down (device and inode) beforehand:
 * a lock with that inode, while that first file still exists, can only be this landing's. Git
 * then updates the working tree into a private index (`read-tree -m -u`, which checks every
 * file before it writes any), the index is renamed into place, the branch moved with
 * `update-ref` against its old value, and the lock released. What was done so far is read
 * back from the branch and the index: `resumeCheckoutMove` finishes it.
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
  /** Set once the move is complete (the record is written next). */
  done?: boolean;
}

/** Why a move could not be made; nothing in the checkout was changed unless `files` says so. */
export class MoveRefused extends Error {
  constructor(
    readonly rule: "locked" | "git" | "moved",
    message: string,
    readonly files: string[] = [],
  ) {
    super(message);
    this.name = "MoveRefused";
  }
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

async function saveMove(layout: GstackLayout, id: string, move: CheckoutMove): Promise<void> {
  await writeFileAtomic(moveFile(layout, id), `${JSON.stringify(move, null, 2)}\n`);
}

/** Forgets the move once the landing's record holds its outcome. */
export async function forgetMove(layout: GstackLayout, id: string): Promise<void> {
  await rm(moveFile(layout, id), { force: true });
}

/**
 * Moves `branch`, checked out in `holder`, from `from` to its descendant `to`: working tree,
 * index and branch. Refuses (changing nothing) when the index is locked by anyone else or when
 * git would overwrite a file it should not.
 */
export async function moveCheckedOutBranch(
  layout: GstackLayout,
  id: string,
  target: { holder: string; branch: string; from: string; to: string; how: "fast-forward" | "merge" },
): Promise<void> {
  const index = await indexPath(target.holder);
  const folder = dirname(index);
  const move: CheckoutMove = {
    ...target,
    index,
    lock: `${index}.lock`,
    owner: join(folder, `gstack-land-${id}.owner`),
    next: join(folder, `gstack-land-${id}.index`),
  };
  await saveMove(layout, id, move);
  await rm(move.owner, { force: true });
  await dropPrivateIndex(move);
  const handle = await open(move.owner, "wx", 0o644);
  const info = await handle.stat();
  await handle.close();
  move.owned = { dev: info.dev, ino: info.ino };
  await saveMove(layout, id, move);
  try {
    await link(move.owner, move.lock);
  } catch (error) {
    await rm(move.owner, { force: true });
    await forgetMove(layout, id);
    if ((error as NodeJS.ErrnoException).code === "EEXIST") throw lockedRefusal(move);
    throw error;
  }
  await copyFile(index, move.next);
  await carryOut(layout, id, move, "first");
}

/**
 * Finishes (or, when the checkout's branch moved since, gives up) a move a crash cut short,
 * removing the index lock only when it is provably this landing's. Returns the move when the
 * branch now stands where the landing meant it to, undefined when the landing should start
 * over (nothing of it is left in the checkout).
 */
export async function resumeCheckoutMove(
  layout: GstackLayout,
  id: string,
): Promise<CheckoutMove | undefined> {
  const move = await readMove(layout, id);
  if (!move) return undefined;
  if (move.done) return move;
  const ours = await ownsLock(move);
  const at = await branchAt(move);
  if (!ours) {
    // Never taken, or already let go (or removed by the person): nothing of ours holds the
    // checkout. The branch says whether the move got through.
    await rm(move.owner, { force: true });
    await dropPrivateIndex(move);
    if (at === move.to) return markDone(layout, id, move);
    await forgetMove(layout, id);
    return undefined;
  }
  if (at === move.to) {
    await release(move);
    return markDone(layout, id, move);
  }
  if (at !== move.from) {
    await release(move);
    await forgetMove(layout, id);
    throw new MoveRefused(
      "moved",
      `${move.branch} moved to ${at.slice(0, 12)} while a landing was cut short; land again to bring the work in from there`,
    );
  }
  if (await indexHolds(move, move.to)) {
    // The index was renamed into place; only the branch is left to move.
    await carryOut(layout, id, move, "index-in-place");
    return markDone(layout, id, move);
  }
  // Cut short while git wrote the working tree: files already at their new content count as
  // written; git checks the rest as it would have the first time.
  await dropPrivateIndex(move);
  await copyFile(move.index, move.next);
  await adoptWrittenFiles(move);
  await carryOut(layout, id, move, "resumed");
  return markDone(layout, id, move);
}

async function markDone(layout: GstackLayout, id: string, move: CheckoutMove): Promise<CheckoutMove> {
  const done = { ...move, done: true };
  await saveMove(layout, id, done);
  return done;
}

/**
 * Under the landing's lock: working tree and index (unless a cut-short move already put the
 * index in place), then the branch.
 */
async function carryOut(
  layout: GstackLayout,
  id: string,
  move: CheckoutMove,
  step: "first" | "resumed" | "index-in-place",
): Promise<void> {
  if (step !== "index-in-place") {
    await withIndex(move.holder, move.next, ["update-index", "-q", "--refresh"]);
    const updated = await withIndex(move.holder, move.next, ["read-tree", "-m", "-u", move.from, move.to]);
    if (!updated.ok) {
      await release(move);
      await forgetMove(layout, id);
      const files = [...updated.stderr.matchAll(/^\t(.+)$/gm)].map((match) => match[1] as string);
      throw new MoveRefused(
        "git",
        `could not bring the work into ${move.branch} in ${move.holder}: ${firstLine(updated.stderr)}${files.length > 0 ? ` (${files.join(", ")})` : ""}; ${step === "first" ? "nothing was changed" : "the landing cut short had already written part of it there"}`,
        files,
      );
    }
    await rename(move.next, move.index);
  }
  const moved = await landGit(
    move.holder,
    ["update-ref", "-m", `gstack land: ${move.how}`, `refs/heads/${move.branch}`, move.to, move.from],
    { detached: true },
  );
  // A git of an earlier landing that outlived its daemon may have moved it just now.
  if (!moved.ok && (await settledAt(move)) !== move.to) {
    // The branch moved under us: put the index and working tree back as they were.
    await copyFile(move.index, move.next);
    await withIndex(move.holder, move.next, ["read-tree", "-m", "-u", move.to, move.from]);
    await rename(move.next, move.index).catch(() => undefined);
    await release(move);
    await forgetMove(layout, id);
    throw new MoveRefused(
      "moved",
      `${move.branch} moved while the work was brought in (${firstLine(moved.stderr)}); nothing was changed: land again`,
    );
  }
  await release(move);
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

function lockedRefusal(move: CheckoutMove): MoveRefused {
  return new MoveRefused(
    "locked",
    `the index of ${move.holder} is locked (${move.lock} exists): a git command is running there, or one that crashed left it; nothing was changed. Once no git is running there, remove ${move.lock} and land again`,
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

/** The checkout's index records exactly the tree of `commit`. */
async function indexHolds(move: CheckoutMove, commit: string): Promise<boolean> {
  const out = await withIndex(move.holder, move.index, [
    "--no-optional-locks",
    "diff-index",
    "--cached",
    "--quiet",
    commit,
  ]);
  return out.ok;
}

/**
 * In the private index, takes the new version of every file the move changes that the working
 * tree already holds (or, for a file the move deletes, no longer holds).
 */
async function adoptWrittenFiles(move: CheckoutMove): Promise<void> {
  const changed = await runGit(move.holder, [
    "diff",
    "--name-only",
    "--no-renames",
    "-z",
    move.from,
    move.to,
  ]);
  for (const path of changed.stdout.split("\0").filter(Boolean)) {
    const entry = (await runGit(move.holder, ["ls-tree", "-z", move.to, "--", path])).stdout;
    const match = /^(\d+) (\w+) ([0-9a-f]+)\t/.exec(entry);
    // A submodule (or anything but a file) is left for git to check.
    if (match && match[2] !== "blob") continue;
    const present = await lstat(join(move.holder, path)).then(
      () => true,
      () => false,
    );
    if (!match) {
      if (!present) await withIndex(move.holder, move.next, ["update-index", "--force-remove", "--", path]);
      continue;
    }
    if (!present) continue;
    const hashed = await runGit(move.holder, ["hash-object", "--", path]);
    if (hashed.ok && hashed.stdout.trim() === match[3]) {
      await withIndex(move.holder, move.next, [
        "update-index",
        "--add",
        "--cacheinfo",
        `${match[1]},${match[3]},${path}`,
      ]);
    }
  }
}

async function indexPath(holder: string): Promise<string> {
  const out = await runGit(holder, ["rev-parse", "--git-path", "index"]);
  if (!out.ok) throw new MoveRefused("git", `git rev-parse in ${holder}: ${firstLine(out.stderr)}`);
  const path = out.stdout.trim();
  return isAbsolute(path) ? path : resolve(holder, path);
}

/**
 * Runs git in `cwd` (with `index` as its index file, when given; nothing else in the
 * environment pointing it elsewhere). `detached` puts git in a process group of its own, for a
 * short step that takes a lock in the person's repository which nothing could later tell from
 * theirs (a ref's, `packed-refs`'): a kill of the daemon's group then lets it finish and let go
 * of its lock, as git does.
 */
export function landGit(
  cwd: string,
  args: string[],
  options: { index?: string; detached?: boolean } = {},
): Promise<GitOutput> {
  const env: NodeJS.ProcessEnv = { ...process.env, GIT_TERMINAL_PROMPT: "0" };
  for (const name of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX"]) {
    delete env[name];
  }
  if (options.index) env.GIT_INDEX_FILE = options.index;
  return new Promise((done) => {
    const child = spawn("git", args, {
      cwd,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: options.detached === true,
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
    const timer = setTimeout(() => child.kill("SIGKILL"), 120_000);
    const finish = (code: number, message = "") => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString() || message;
      done({ ok: code === 0, code, stdout: Buffer.concat(out).toString(), stderr });
    };
    child.on("error", (error) => finish(1, error.message));
    child.on("close", (code, signal) => finish(code ?? 1, signal ? `git was stopped by ${signal}` : ""));
  });
}

function withIndex(cwd: string, index: string, args: string[]): Promise<GitOutput> {
  return landGit(cwd, args, { index });
}
