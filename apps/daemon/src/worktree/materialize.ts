import { mkdir, readdir, readFile, realpath, rm, statfs } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import type { WorktreeRecord } from "@gstack/daemon-client";
import { exists, firstLine, type GitOutput, gitText, listWorktrees, runGit } from "@gstack/daemon-client";

/** The reason a worktree the daemon is still checking out is locked with. */
export const CHECKING_OUT = "gstack: checking out";

/**
 * Makes the planned worktree, or finds it made, in steps that a kill -9 of the daemon's process
 * group at any moment leaves either done or safe to do again:
 * 1. the branch is created (create-only) by a git in a process group of its own, so a kill
 *    lets it finish and let go of the ref's lock in the person's repository;
 * 2. `git worktree add --no-checkout --lock` registers the worktree on that branch, locked
 *    (by the daemon's own reason) until its files are out; it takes locks only in the
 *    worktree's own git folder;
 * 3. the files are checked out with `git read-tree --reset -u HEAD` inside the worktree (its
 *    own index only; no ref is touched), then the worktree is unlocked.
 * A worktree found still locked so is finished from step 3 (a stale `index.lock` in its own git
 * folder, which only the daemon writes, is cleared first); one whose registration was cut short
 * is removed (its folder and its own record only) and made again. A branch that already exists
 * (an earlier attempt's, or the one the dispatch named) is checked out as it is.
 * Returns true when it made the worktree now.
 */
export async function materializeWorktree(record: WorktreeRecord): Promise<boolean> {
  const own = await madeAsRecorded(record);
  if (own !== undefined) {
    // An index lock a killed agent's git left in the worktree's own git folder: nothing of the
    // daemon's runs there while a run is being started (an earlier attempt's agent has ended,
    // or recovery confirmed it gone), so it is stale, and would fail the agent's next commit.
    await rm(join(own, "index.lock"), { force: true });
    await mkdir(record.cwd, { recursive: true });
    return false;
  }
  // A folder that is not there was never made, or its registration was cut short before git
  // made it: `worktree add` goes ahead, and a record left without its folder is cleared when
  // git names it. Only a folder that exists is looked up in the list of every worktree.
  const folder = await exists(record.path);
  const registered = folder
    ? (await listWorktrees(record.repo)).find((entry) => resolve(entry.path) === resolve(record.path))
    : undefined;
  if (registered && (await exists(join(record.path, ".git")))) {
    if (registered.lockReason === CHECKING_OUT && registered.branch === record.branch) {
      await checkOutFiles(record, false);
      return true;
    }
    if (!registered.initializing && registered.lockReason !== CHECKING_OUT) {
      if (registered.branch !== record.branch) {
        throw new Error(
          `the worktree ${record.path} is on '${registered.branch ?? "a detached HEAD"}', not '${record.branch}'`,
        );
      }
      await mkdir(record.cwd, { recursive: true });
      return false;
    }
  }
  // Registration cut short (or a folder without one): clear this worktree's own record and
  // folder only; a global prune could take the record of a worktree another process is adding.
  if (registered || folder) await clearCutRegistration(record);
  // worktrees/ and its project folders are the user's alone, as the rest of the state root.
  await mkdir(dirname(record.path), { recursive: true, mode: 0o700 });
  const createdBranch = await ensureBranch(record);
  const add = () =>
    runGit(record.repo, [
      "worktree",
      "add",
      "--quiet",
      "--no-checkout",
      "--lock",
      "--reason",
      CHECKING_OUT,
      record.path,
      record.branch,
    ]);
  // Whatever a git stopped halfway left of this worktree is cleared before it runs again.
  const clearHalfMade = async () => {
    if (await exists(record.path)) await clearCutRegistration(record);
  };
  let added = await retryWhileBusy(add, clearHalfMade);
  if (!added.ok && /already registered/.test(added.stderr)) {
    // A registration cut short before git made the folder: cleared, then made again.
    await clearCutRegistration(record);
    added = await retryWhileBusy(add, clearHalfMade);
  }
  if (!added.ok) await failed(record, createdBranch, added.stderr);
  await checkOutFiles(record, createdBranch);
  return true;
}

/**
 * Clears a registration cut short: this worktree's own record in git's folder and its folder
 * only; a global prune could take the record of a worktree another process is adding.
 */
async function clearCutRegistration(record: WorktreeRecord): Promise<void> {
  for (const admin of await adminFolders(record)) {
    await rm(admin, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  }
  await rm(record.path, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
}

/**
 * What git says when another git of the same repository is halfway through a write this one
 * reads or must take in turn: a worktree record still being written ("failed to read
 * …/commondir"), or a lock file another git holds for a moment (a ref, the config, packed-refs).
 */
const BUSY =
  /failed to read .*(commondir|gitdir)|\.lock'?: File exists|cannot lock ref|could not lock config file|Another git process seems to be running/i;

/**
 * Runs a git step again while it fails only because another git in the same repository holds
 * what it needs for a moment: worktrees of one repository are made side by side, and git's own
 * locks take the turns (never a lock of ours around every creation). Gives up after 30 s.
 */
async function retryWhileBusy(
  step: () => Promise<GitOutput>,
  beforeAgain: () => Promise<void>,
): Promise<GitOutput> {
  const deadline = Date.now() + 30_000;
  for (let wait = 5; ; wait = Math.min(wait * 2, 250)) {
    const out = await step();
    if (out.ok || !BUSY.test(out.stderr) || Date.now() > deadline) return out;
    await new Promise((done) => setTimeout(done, wait + Math.random() * wait));
    await beforeAgain();
  }
}

/**
 * The quick look for a worktree made earlier (a resumed or retried run): reads the few files
 * `git worktree list` itself reads, without starting git. True only when the worktree's `.git`
 * names its own git folder, that folder points back at it, its HEAD is the recorded branch and
 * it is not locked (a creation still unfinished is): then its git folder is returned. Anything
 * else goes the long way, through git.
 */
async function madeAsRecorded(record: WorktreeRecord): Promise<string | undefined> {
  const dotGit = join(record.path, ".git");
  const pointer = /^gitdir: (.+)$/m.exec(await readFile(dotGit, "utf8").catch(() => ""))?.[1]?.trim();
  if (!pointer) return undefined;
  const own = resolve(record.path, pointer);
  const [back, head, locked] = await Promise.all([
    readFile(join(own, "gitdir"), "utf8").catch(() => ""),
    readFile(join(own, "HEAD"), "utf8").catch(() => ""),
    exists(join(own, "locked")),
  ]);
  if (locked || head.trim() !== `ref: refs/heads/${record.branch}`) return undefined;
  const backTo = resolve(own, back.trim());
  const pointsBack =
    backTo === resolve(dotGit) ||
    (await realpath(dirname(backTo)).catch(() => "")) === (await realpath(record.path).catch(() => "-"));
  return pointsBack ? own : undefined;
}

/** Step 3 of making a worktree: its files, then the lock let go. */
async function checkOutFiles(record: WorktreeRecord, createdBranch: boolean): Promise<void> {
  const own = await ownGitFolder(record.path);
  // The worktree's own index lock: only the daemon's git writes there, and none runs now for
  // this worktree (a dispatch is prepared once at a time; a killed daemon's group is gone).
  await rm(join(own, "index.lock"), { force: true });
  const checkout = await runGit(record.path, ["read-tree", "--reset", "-u", "HEAD"]);
  if (!checkout.ok) await failed(record, createdBranch, checkout.stderr);
  // Unlocked as `git worktree unlock` does it, by removing the worktree's own `locked` file;
  // git itself would first read the record of every worktree to find this one.
  try {
    await rm(join(own, "locked"), { force: true });
  } catch (error) {
    throw new Error(`could not unlock the worktree ${record.path}: ${String(error)}`);
  }
  await mkdir(record.cwd, { recursive: true });
}

/** The worktree's own git folder, from its `.git` file (git is asked when that is unusual). */
async function ownGitFolder(path: string): Promise<string> {
  const pointer = /^gitdir: (.+)$/m.exec(await readFile(join(path, ".git"), "utf8").catch(() => ""))?.[1];
  const own = pointer ? resolve(path, pointer.trim()) : undefined;
  if (own && (await exists(join(own, "commondir")))) return own;
  return gitText(path, ["rev-parse", "--absolute-git-dir"]);
}

/**
 * Creates the dispatch's branch at its base unless it exists. Create-only (git refuses it when
 * the branch exists, and changes nothing), in a process group of its own: a kill of the daemon's
 * group lets it finish. Only when it is refused is git asked whether the branch exists, so a new
 * branch costs one git process. A retry that meets the ref still locked (that git is still
 * finishing) waits for it. Returns true when it created the branch.
 */
async function ensureBranch(record: WorktreeRecord): Promise<boolean> {
  const ref = `refs/heads/${record.branch}`;
  const deadline = Date.now() + 30_000;
  for (let wait = 10; ; wait = Math.min(wait * 2, 500)) {
    const made = await runGit(record.repo, ["update-ref", "--no-deref", ref, record.base_sha, ""], {
      detached: true,
    });
    if (made.ok) return true;
    if ((await runGit(record.repo, ["rev-parse", "--verify", "--quiet", ref])).ok) return false;
    if (Date.now() > deadline) {
      throw new Error(
        `could not create the branch '${record.branch}' in ${record.repo}: ${firstLine(made.stderr)}`,
      );
    }
    await new Promise((done) => setTimeout(done, wait));
  }
}

/** Undoes a creation that failed (its folder, its record, a branch made for it) and throws. */
async function failed(record: WorktreeRecord, createdBranch: boolean, stderr: string): Promise<never> {
  await runGit(record.repo, ["worktree", "remove", "--force", "--force", record.path]);
  for (const admin of await adminFolders(record)) await rm(admin, { recursive: true, force: true });
  await rm(record.path, { recursive: true, force: true });
  // A branch made just now goes too (a retry makes it again from the same base).
  if (createdBranch) {
    await runGit(record.repo, ["update-ref", "-d", `refs/heads/${record.branch}`, record.base_sha], {
      detached: true,
    });
  }
  const error: NodeJS.ErrnoException = new Error(
    `could not make the worktree ${record.path}: ${firstLine(stderr)}`,
  );
  if (await outOfSpace(record, stderr)) error.code = "ENOSPC";
  throw error;
}

/** git's own folders for the worktree at `record.path` (those whose `gitdir` points there). */
async function adminFolders(record: WorktreeRecord): Promise<string[]> {
  const common = await runGit(record.repo, ["rev-parse", "--path-format=absolute", "--git-common-dir"]);
  if (!common.ok) return [];
  const root = join(common.stdout.trim(), "worktrees");
  const names = await readdir(root).catch(() => [] as string[]);
  const wanted = [
    resolve(record.path, ".git"),
    await realpath(dirname(record.path)).then(
      (parent) => join(parent, basename(record.path), ".git"),
      () => resolve(record.path, ".git"),
    ),
  ];
  const found: string[] = [];
  for (const name of names) {
    const pointer = await readFile(join(root, name, "gitdir"), "utf8").catch(() => undefined);
    if (pointer !== undefined && wanted.includes(resolve(pointer.trim()))) found.push(join(root, name));
  }
  return found;
}

/**
 * Whether a failed `git worktree add` failed for lack of space. git does not always say so (a
 * checkout that runs out reports "unable to write file …"), so besides its words the free space
 * where the worktree goes is weighed against the size of the files it checks out.
 */
async function outOfSpace(record: WorktreeRecord, stderr: string): Promise<boolean> {
  if (/No space left on device|Disk quota exceeded/i.test(stderr)) return true;
  if (!/unable to (write|create)|could not write|cannot write/i.test(stderr)) return false;
  const free = await statfs(dirname(record.path)).then(
    (fs) => fs.bavail * fs.bsize,
    () => undefined,
  );
  if (free === undefined) return false;
  const listed = await runGit(record.repo, ["ls-tree", "-r", "-l", "-z", record.base_sha]);
  let needed = 0;
  for (const entry of listed.stdout.split("\0")) {
    const size = Number(/^\S+ blob \S+ +(\d+)\t/.exec(entry)?.[1] ?? 0);
    needed += size;
  }
  return free < needed;
}
