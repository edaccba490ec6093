import { mkdir, readdir, readFile, realpath, rm, statfs } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { exists } from "../exists";
import { findRepository } from "../trust/repository";
import { branchNameProblem, defaultBranch } from "./branch-name";
import { firstLine, type GitOutput, gitText, runGit } from "./run-git";

export {
  branchTips,
  commitsToLand,
  diskUse,
  measuredCommits,
  measureWorktree,
  type WorktreeMeasure,
} from "./measure";

/**
 * A dispatch's own worktree, decided before it is made and kept in the session's state, so a
 * crash at any point finds the same folder, branch and base again.
 */
export interface WorktreeRecord {
  /** The top folder of the project's checkout (the user's). */
  repo: string;
  /**
   * The common git folder of the repository the worktree is made from (real path), which landing
   * must find again behind `repo`; absent in records made before it was kept.
   */
  common_dir?: string;
  /** The worktree's folder under the state root. */
  path: string;
  /** Where the agent works: the worktree, or the same subfolder `project_dir` named. */
  cwd: string;
  branch: string;
  /** What the work started from, as the dispatch named it (or the branch/commit checked out). */
  base: string;
  base_sha: string;
  /** The branch landing brings the work into; absent when the base is not a branch. */
  land_into?: string;
  /** The branch existed before the dispatch (it named one): landing and discarding keep it. */
  branch_existed?: boolean;
  /**
   * The repository's initialised submodules (paths): git does not check them out in a new
   * worktree, where each is an empty folder; the run's log and report say so.
   */
  submodules?: string[];
  created_at: string;
}

/** Why a dispatch cannot have a worktree; `rule` names the check for logs and tests. */
export class WorktreeRefusal extends Error {
  constructor(
    readonly rule:
      | "not-a-repository"
      | "bare-repository"
      | "no-commit"
      | "submodules"
      | "base-missing"
      | "dirty-base"
      | "branch-name"
      | "branch-checked-out"
      | "inside-worktree",
    message: string,
  ) {
    super(message);
    this.name = "WorktreeRefusal";
  }
}

/** The folder holding every dispatch worktree of the state root. */
export function worktreesRoot(stateRoot: string): string {
  return join(stateRoot, "worktrees");
}

/** Where a dispatch's worktree lives: one folder per project, one per dispatch in it. */
export function worktreePath(stateRoot: string, project: string, dispatchId: string): string {
  return join(worktreesRoot(stateRoot), project, dispatchId);
}

/** True when `folder` lies inside a dispatch worktree of this state root. */
export async function insideDispatchWorktree(stateRoot: string, folder: string): Promise<boolean> {
  const root = await realpath(worktreesRoot(stateRoot)).catch(() => resolve(worktreesRoot(stateRoot)));
  const real = await realpath(folder).catch(() => resolve(folder));
  return real === root || real.startsWith(root + sep);
}

export interface WorktreeRequest {
  stateRoot: string;
  project: string;
  dispatchId: string;
  projectDir: string;
  branch?: string;
  base?: string;
  now: Date;
}

/**
 * Decides a dispatch's worktree without writing anything: checks that the project's checkout
 * can have one, resolves the base to a commit and the branch name. Throws a WorktreeRefusal
 * saying why when it cannot.
 */
export async function planWorktree(request: WorktreeRequest): Promise<WorktreeRecord> {
  const { projectDir } = request;
  if (await insideDispatchWorktree(request.stateRoot, projectDir)) {
    throw new WorktreeRefusal(
      "inside-worktree",
      `project_dir ${projectDir} is inside another dispatch's worktree; name the project's own checkout`,
    );
  }
  const probe = await runGit(projectDir, ["rev-parse", "--is-bare-repository", "--show-toplevel"]);
  if (!probe.ok) {
    const bare = await runGit(projectDir, ["rev-parse", "--is-bare-repository"]);
    if (bare.ok && bare.stdout.trim() === "true") {
      throw new WorktreeRefusal(
        "bare-repository",
        `project_dir ${projectDir} is a bare repository: it has no checkout to start from; name a clone of it`,
      );
    }
    throw new WorktreeRefusal(
      "not-a-repository",
      `project_dir ${projectDir} is not in a git repository, so the dispatch cannot have a worktree of its own; run 'git init' there or list the project in in_place_projects`,
    );
  }
  const [isBare, top] = probe.stdout.trim().split("\n");
  if (isBare === "true" || !top) {
    throw new WorktreeRefusal("bare-repository", `project_dir ${projectDir} is a bare repository`);
  }
  const repo = await realpath(top);
  const found = await findRepository(repo);
  const sub = relative(repo, await realpath(projectDir));
  if (sub.startsWith("..") || isAbsolute(sub)) {
    throw new WorktreeRefusal(
      "not-a-repository",
      `project_dir ${projectDir} is outside its repository ${repo}`,
    );
  }
  // Only a repository with a .gitmodules file has submodules to check.
  const submodules = (await exists(join(repo, ".gitmodules")))
    ? await runGit(repo, ["submodule", "status"])
    : { stdout: "" };
  const missing = submodules.stdout
    .split("\n")
    .filter((line) => line.startsWith("-"))
    .map((line) => line.slice(1).split(" ")[1] ?? line);
  const initialised = submodules.stdout
    .split("\n")
    .filter((line) => /^[ +U]/.test(line) && line.trim() !== "")
    .map((line) => line.slice(1).split(" ")[1] ?? "")
    .filter(Boolean);
  if (missing.length > 0) {
    throw new WorktreeRefusal(
      "submodules",
      `the repository ${repo} has submodules that are not initialised (${missing.join(", ")}); run 'git submodule update --init' first`,
    );
  }
  const branch = request.branch ?? defaultBranch(request.dispatchId);
  const problem = branchNameProblem(branch);
  if (problem) throw new WorktreeRefusal("branch-name", `branch '${branch}' ${problem}`);
  const path = worktreePath(request.stateRoot, request.project, request.dispatchId);
  const branchExisted = (await runGit(repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`])).ok;
  // Only a branch that exists can be checked out somewhere: a new one skips the list of every
  // worktree, which grows with the worktrees waiting to be landed.
  const checkedOut = branchExisted
    ? (await listWorktrees(repo)).find(
        (entry) => entry.branch === branch && resolve(entry.path) !== resolve(path),
      )
    : undefined;
  if (checkedOut) {
    throw new WorktreeRefusal(
      "branch-checked-out",
      `branch '${branch}' is checked out in ${checkedOut.path}; git lets a branch be checked out in one place only`,
    );
  }
  const checkoutBranch = (await runGit(repo, ["symbolic-ref", "--quiet", "--short", "HEAD"])).stdout.trim();
  let base: string;
  let baseSha: string;
  let landInto: string | undefined;
  if (request.base !== undefined) {
    base = request.base;
    const resolved = await runGit(repo, [
      "rev-parse",
      "--verify",
      "--quiet",
      "--end-of-options",
      `${request.base}^{commit}`,
    ]);
    if (!resolved.ok || request.base.startsWith("-")) {
      throw new WorktreeRefusal(
        "base-missing",
        `base '${request.base}' is not a branch, tag or commit of ${repo}`,
      );
    }
    baseSha = resolved.stdout.trim();
    const isBranch = (await runGit(repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${request.base}`]))
      .ok;
    if (isBranch) {
      landInto = request.base;
      if (request.base === checkoutBranch && (await hasUncommittedChanges(repo))) {
        throw new WorktreeRefusal(
          "dirty-base",
          `base '${request.base}' is checked out in ${repo} with uncommitted changes the dispatch would not see; commit or stash them, or start from another base`,
        );
      }
    }
  } else {
    const head = await runGit(repo, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]);
    if (!head.ok) {
      throw new WorktreeRefusal(
        "no-commit",
        `the repository ${repo} has no commit yet to start a worktree from`,
      );
    }
    baseSha = head.stdout.trim();
    base = checkoutBranch || baseSha;
    if (checkoutBranch) landInto = checkoutBranch;
  }
  return {
    repo,
    ...(found.kind === "repository" ? { common_dir: found.commonDir } : {}),
    path,
    cwd: sub ? join(path, sub) : path,
    branch,
    base,
    base_sha: baseSha,
    ...(landInto ? { land_into: landInto } : {}),
    ...(branchExisted ? { branch_existed: true } : {}),
    ...(initialised.length > 0 ? { submodules: initialised } : {}),
    created_at: request.now.toISOString(),
  };
}

/** What a worktree of a repository with submodules lacks, for the run's log and its report. */
export function submodulesNote(record: WorktreeRecord): string | undefined {
  const paths = record.submodules ?? [];
  if (paths.length === 0) return undefined;
  const one = paths.length === 1;
  return `The repository's submodule${one ? "" : "s"} ${paths.join(", ")} ${one ? "is an empty folder" : "are empty folders"} in the dispatch's worktree: git does not check submodules out in a new worktree, so the agent saw none of ${one ? "its" : "their"} files (to work on a submodule, dispatch into its own checkout).`;
}

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
 * Creates the dispatch's branch at its base unless it exists. Create-only, in a process group
 * of its own: a kill of the daemon's group lets it finish. A retry that meets the ref still
 * locked (that git is still finishing) waits for it. Returns true when it created the branch.
 */
async function ensureBranch(record: WorktreeRecord): Promise<boolean> {
  const ref = `refs/heads/${record.branch}`;
  const deadline = Date.now() + 30_000;
  for (let wait = 10; ; wait = Math.min(wait * 2, 500)) {
    if ((await runGit(record.repo, ["rev-parse", "--verify", "--quiet", ref])).ok) return false;
    const made = await runGit(record.repo, ["update-ref", "--no-deref", ref, record.base_sha, ""], {
      detached: true,
    });
    if (made.ok) return true;
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

/** One entry of `git worktree list`. */
export interface WorktreeEntry {
  path: string;
  head?: string;
  branch?: string;
  bare: boolean;
  prunable: boolean;
  /** Locked by `git worktree add` while it checks the files out. */
  initializing: boolean;
  /** Why the worktree is locked, when it is. */
  lockReason?: string;
}

/** The worktrees of the repository at `repo`, its main checkout first. */
export async function listWorktrees(repo: string): Promise<WorktreeEntry[]> {
  const out = await runGit(repo, ["worktree", "list", "--porcelain", "-z"]);
  if (!out.ok) return [];
  const entries: WorktreeEntry[] = [];
  let current: WorktreeEntry | undefined;
  for (const field of out.stdout.split("\0")) {
    if (field === "") {
      current = undefined;
      continue;
    }
    if (field.startsWith("worktree ")) {
      current = { path: field.slice("worktree ".length), bare: false, prunable: false, initializing: false };
      entries.push(current);
    } else if (current && field.startsWith("HEAD ")) current.head = field.slice(5);
    else if (current && field.startsWith("branch refs/heads/")) current.branch = field.slice(18);
    else if (current && field === "bare") current.bare = true;
    else if (current && field.startsWith("prunable")) current.prunable = true;
    else if (current && field === "locked initializing") {
      current.initializing = true;
      current.lockReason = "initializing";
    } else if (current && field.startsWith("locked")) current.lockReason = field.slice(7);
  }
  return entries;
}

/** Staged or unstaged changes to tracked files (untracked files do not count). */
export async function hasUncommittedChanges(folder: string): Promise<boolean> {
  const status = await runGit(folder, ["status", "--porcelain", "--untracked-files=no"]);
  return !status.ok || status.stdout.trim().length > 0;
}

/** A file the dispatch's commits changed against the base. */
export interface FileChange {
  path: string;
  insertions?: number;
  deletions?: number;
}

/** Files changed between `baseSha` and the worktree's HEAD, with lines added and removed. */
export async function filesChanged(worktree: string, baseSha: string): Promise<FileChange[]> {
  const out = await runGit(worktree, ["diff", "--numstat", "--no-renames", "-z", baseSha, "HEAD", "--"]);
  if (!out.ok) return [];
  const changes: FileChange[] = [];
  for (const record of out.stdout.split("\0")) {
    const match = /^(-|\d+)\t(-|\d+)\t([\s\S]+)$/.exec(record.replace(/^\n/, ""));
    if (!match?.[3]) continue;
    changes.push({
      path: match[3],
      ...(match[1] !== "-" ? { insertions: Number(match[1]) } : {}),
      ...(match[2] !== "-" ? { deletions: Number(match[2]) } : {}),
    });
  }
  return changes;
}

/** Removes a dispatch's worktree folder and git's record of it (the branch stays). */
export async function removeWorktree(repo: string, path: string): Promise<void> {
  const removed = await runGit(repo, ["worktree", "remove", "--force", "--force", path]);
  if (!removed.ok) {
    await rm(path, { recursive: true, force: true });
    await runGit(repo, ["worktree", "prune"]);
  }
}
