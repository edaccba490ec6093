import { lstat } from "node:fs/promises";
import { join } from "node:path";
import type { SessionState } from "../session-state";
import type { WorktreeRecord } from "../worktree/record";
import { firstLine, runGit } from "../worktree/run-git";
import { LandRefusal } from "./land-refusal";

export async function branchTip(tree: WorktreeRecord): Promise<string> {
  const tip = await runGit(tree.repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${tree.branch}`]);
  if (!tip.ok)
    throw new LandRefusal("no-branch", `the branch ${tree.branch} no longer exists in ${tree.repo}`);
  return tip.stdout.trim();
}

export async function isAncestor(repo: string, ancestor: string, of: string): Promise<boolean> {
  return (await runGit(repo, ["merge-base", "--is-ancestor", ancestor, of])).ok;
}

/** A merge commit of `tip` into `targetSha`, made in the object store only; refuses on a conflict. */
export async function mergeCommit(
  tree: WorktreeRecord,
  target: string,
  targetSha: string,
  tip: string,
  state: SessionState,
): Promise<string> {
  const merged = await runGit(tree.repo, [
    "merge-tree",
    "--write-tree",
    "--name-only",
    "--no-messages",
    targetSha,
    tip,
  ]);
  const lines = merged.stdout.split("\n");
  if (merged.code === 1) {
    const files = lines.slice(1).filter((line) => line.length > 0);
    throw new LandRefusal(
      "conflict",
      `${tree.branch} conflicts with ${target} in ${files.join(", ")}; nothing was changed: merge it yourself, or discard it`,
      files,
    );
  }
  if (!merged.ok || !lines[0]) throw new LandRefusal("git", `git merge-tree: ${firstLine(merged.stderr)}`);
  const message = `Merge ${tree.branch} into ${target}\n\nDispatch ${state.id} (${state.project}).\n`;
  return gitOut(tree.repo, ["commit-tree", lines[0], "-p", targetSha, "-p", tip, "-m", message]);
}

/**
 * Tracked files with staged or unstaged changes in a checkout (git's own refusal, when it cannot
 * tell, stands for one). Read without git's optional index refresh, which takes the index lock.
 */
export async function changedFiles(folder: string): Promise<string[]> {
  const out = await runGit(folder, [
    "--no-optional-locks",
    "status",
    "--porcelain",
    "--untracked-files=no",
    "-z",
  ]);
  if (!out.ok) return [`(git status: ${firstLine(out.stderr)})`];
  return out.stdout
    .split("\0")
    .filter((entry) => entry.length > 3)
    .map((entry) => entry.slice(3));
}

/**
 * Paths the move from `from` to `to` adds that something untracked in the checkout occupies (an
 * ignored `config.env`, an untracked file or folder, an untracked file where the landing needs a
 * folder): git would overwrite an ignored file there silently. A path taken by what `from` tracks
 * (a tracked file the landing turns into a folder, a tracked folder it turns into a file) is
 * git's to replace and not in the way; git is asked only about paths where something is found.
 */
export async function filesInTheWay(
  repo: string,
  checkout: string,
  from: string,
  to: string,
): Promise<string[]> {
  const args = ["diff-tree", "-r", "--no-renames", "--name-only", "--diff-filter=A", "-z", from, to];
  const added = await runGit(repo, args);
  if (!added.ok) throw new LandRefusal("git", `git diff-tree: ${firstLine(added.stderr)}`);
  // What occupies each added path: the path itself, or a file where it needs a folder.
  const occupied = new Map<string, string>();
  for (const path of added.stdout.split("\0").filter(Boolean)) {
    const code = await lstat(join(checkout, path)).then(
      () => "EXISTS",
      (error: NodeJS.ErrnoException) => error.code,
    );
    if (code === "EXISTS") occupied.set(path, path);
    else if (code === "ENOTDIR") {
      const parts = path.split("/");
      for (let depth = 1; depth < parts.length; depth += 1) {
        const parent = parts.slice(0, depth).join("/");
        const info = await lstat(join(checkout, parent)).catch(() => undefined);
        if (info && !info.isDirectory()) {
          occupied.set(path, parent);
          break;
        }
      }
    }
  }
  if (occupied.size === 0) return [];
  // Of those, the ones git does not track: untracked and ignored files alike (no exclusions).
  const occupants = [...new Set(occupied.values())];
  const others = await runGit(checkout, [
    "--literal-pathspecs",
    "ls-files",
    "-z",
    "--others",
    "--",
    ...occupants,
  ]);
  if (!others.ok) throw new LandRefusal("git", `git ls-files: ${firstLine(others.stderr)}`);
  const untracked = others.stdout.split("\0").filter(Boolean);
  return occupants.filter((occupant) =>
    untracked.some((file) => file === occupant || file.startsWith(`${occupant}/`)),
  );
}

export async function gitOut(cwd: string, args: string[]): Promise<string> {
  const out = await runGit(cwd, args);
  if (!out.ok) throw new LandRefusal("git", `git ${args[0]}: ${firstLine(out.stderr)}`);
  return out.stdout.trim();
}
