import { rm } from "node:fs/promises";
import { runGit } from "./run-git";

/*
 * What git says of a repository's worktrees and of one worktree's changes, and removing one:
 * shared by making, finishing and landing.
 */

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
