import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import { runGit } from "./run-git";

/** What measuring needs of a worktree's record (a `WorktreeRecord` is one). */
export interface MeasuredTree {
  repo: string;
  path: string;
  branch: string;
  base_sha: string;
  land_into?: string;
}

/*
 * What a finished worktree holds to land and how big it is: measured once when its dispatch
 * finishes and kept, so `status` (which loads this and little else) walks no worktree.
 */

/**
 * How many commits the dispatch's branch holds that the branch it lands into does not (its base
 * commit when the base is not a branch, or that branch is gone): 0 means there is nothing to land,
 * as when the branch no longer exists. Undefined when git cannot tell. Finishing (the completion's
 * `landing`), `status`, `land` and `discard` all judge by this one count. `tips`, when given,
 * are the repository's branch tips just read ({@link branchTips}), which spares a git call.
 */
export async function commitsToLand(
  tree: MeasuredTree,
  tips?: ReadonlyMap<string, string>,
): Promise<number | undefined> {
  let tip: string | undefined;
  if (tips) {
    // The branch tips read a moment ago (branchTips): a branch not among them does not exist.
    tip = tips.get(`refs/heads/${tree.branch}`);
    if (tip === undefined) return 0;
  } else {
    const found = await runGit(tree.repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${tree.branch}`]);
    // git says 1 for a ref that does not exist; anything else (no repository) is not an answer.
    if (!found.ok) return found.code === 1 ? 0 : undefined;
    tip = found.stdout.trim();
  }
  const count = async (against: string) => {
    const out = await runGit(tree.repo, ["rev-list", "--count", `${against}..${tip}`]);
    const value = Number(out.stdout.trim());
    return out.ok && Number.isInteger(value) ? value : undefined;
  };
  const intoRef = tree.land_into ? `refs/heads/${tree.land_into}` : undefined;
  const into = intoRef && tips ? tips.get(intoRef) : intoRef;
  return (into ? await count(into) : undefined) ?? count(tree.base_sha);
}

/** A finished worktree's size and commits to land, measured once when its dispatch finishes. */
export interface WorktreeMeasure {
  commits: number;
  disk_bytes: number;
  /** The branch's tip when counted (absent when the branch did not exist). */
  tip?: string;
  /** The tip of the branch it lands into when counted (absent when there is none). */
  into_tip?: string;
}

/** The tips of every local branch of a repository, by full ref name, from one git call. */
export async function branchTips(repo: string): Promise<Map<string, string> | undefined> {
  const out = await runGit(repo, ["for-each-ref", "--format=%(objectname) %(refname)", "refs/heads"]);
  if (!out.ok) return undefined;
  const tips = new Map<string, string>();
  for (const line of out.stdout.split("\n")) {
    const space = line.indexOf(" ");
    if (space > 0) tips.set(line.slice(space + 1), line.slice(0, space));
  }
  return tips;
}

/**
 * Counts the commits to land and the bytes in the worktree's folder, with the tips they were
 * counted against; undefined when git cannot tell. Walks every file: call it once per worktree.
 */
export async function measureWorktree(tree: MeasuredTree): Promise<WorktreeMeasure | undefined> {
  const tips = await branchTips(tree.repo);
  if (!tips) return undefined;
  // Counted from the same tips the measure records, so the count and its tips always agree.
  const commits = await commitsToLand(tree, tips);
  if (commits === undefined) return undefined;
  const tip = tips.get(`refs/heads/${tree.branch}`);
  const into = tree.land_into ? tips.get(`refs/heads/${tree.land_into}`) : undefined;
  return {
    commits,
    disk_bytes: await diskUse(tree.path),
    ...(tip ? { tip } : {}),
    ...(into ? { into_tip: into } : {}),
  };
}

/**
 * The commits to land from a measure taken earlier, when neither branch has moved since (the
 * tips come from `branchTips`); undefined when it must be counted again.
 */
export function measuredCommits(
  tree: MeasuredTree,
  measure: WorktreeMeasure | undefined,
  tips: ReadonlyMap<string, string>,
): number | undefined {
  if (!measure) return undefined;
  if (tips.get(`refs/heads/${tree.branch}`) !== measure.tip) return undefined;
  if (tree.land_into && tips.get(`refs/heads/${tree.land_into}`) !== measure.into_tip) return undefined;
  return measure.commits;
}

/** Bytes of every file and folder under `folder` (0 when it is gone). */
export async function diskUse(folder: string): Promise<number> {
  let total = 0;
  const walk = async (path: string): Promise<void> => {
    const info = await lstat(path).catch(() => undefined);
    if (!info) return;
    total += info.size;
    if (!info.isDirectory()) return;
    for (const name of await readdir(path).catch(() => [] as string[])) await walk(join(path, name));
  };
  await walk(folder);
  return total;
}
