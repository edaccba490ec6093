import { realpath } from "node:fs/promises";
import { join, resolve, sep } from "node:path";

/*
 * What a dispatch's worktree is: its record, kept in the session's state, where it lives, and
 * why a dispatch may be refused one. The stages that plan, make, land and remove worktrees share
 * these and import nothing else of each other through them.
 */

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

/** What a worktree of a repository with submodules lacks, for the run's log and its report. */
export function submodulesNote(record: WorktreeRecord): string | undefined {
  const paths = record.submodules ?? [];
  if (paths.length === 0) return undefined;
  const one = paths.length === 1;
  return `The repository's submodule${one ? "" : "s"} ${paths.join(", ")} ${one ? "is an empty folder" : "are empty folders"} in the dispatch's worktree: git does not check submodules out in a new worktree, so the agent saw none of ${one ? "its" : "their"} files (to work on a submodule, dispatch into its own checkout).`;
}
