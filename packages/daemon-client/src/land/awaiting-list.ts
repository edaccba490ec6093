import { existsSync } from "node:fs";
import type { GstackLayout } from "@gstack/contracts";
import { readAllStates, type SessionState } from "../session-state";
import type { FinishedState } from "../status-summary";
import { branchTips, commitsToLand, measuredCommits } from "../worktree/measure";
import { branchTipsFromFiles } from "../worktree/ref-files";
import { landingFile } from "./landing-file";

/*
 * The list of finished dispatches waiting to be landed or discarded, as `status` shows it. Kept
 * apart from landing itself so that `status` loads only this.
 */

/** A finished dispatch whose branch waits for the person to land or discard it. */
export interface AwaitingLanding {
  id: string;
  project: string;
  branch: string;
  base: string;
  /** Seconds since the dispatch finished. */
  age_seconds: number;
  /**
   * Bytes of files in its worktree as measured when the dispatch finished (0 once retention
   * removed the folder); absent for a dispatch that finished before it was measured.
   */
  disk_bytes?: number;
  worktree: string;
  /** Its branch has no commits beyond its base: nothing to land, only its worktree to discard. */
  nothing?: boolean;
}

/**
 * Finished dispatches with a worktree, neither landed nor discarded, oldest first; `nothing` is
 * true for one whose branch has no commits beyond its base (it is never offered for landing:
 * only discard applies). Walks no worktree: sizes and counts are the ones measured when each
 * dispatch finished, with the branch tips read from git's files (or one git call per repository
 * where they are laid out otherwise) to see whether a branch moved since (a moved one is counted
 * again).
 */
export async function awaitingLanding(
  layout: GstackLayout,
  now: Date,
  states?: readonly (SessionState | FinishedState)[],
): Promise<AwaitingLanding[]> {
  const candidates = (states ?? (await readAllStates(layout))).filter(
    (state): state is FinishedState & { worktree: NonNullable<FinishedState["worktree"]> } =>
      state.status === "finished" && state.worktree !== undefined,
  );
  // Two stat calls each, synchronous (hundreds of them cost a few milliseconds, far less than as
  // many trips through the thread pool); git only where the tips cannot be read from its files,
  // and again for a moved branch.
  const looked = candidates.map((state) => ({
    state,
    landed: existsSync(landingFile(layout, state.id)),
    present: existsSync(state.worktree.path),
  }));
  // The tips are read from git's files where they are in its plain layout (no git started),
  // else from git once per repository.
  const wanted = new Map<string, Set<string>>();
  for (const { state, landed } of looked) {
    if (landed) continue;
    const refs = wanted.get(state.worktree.repo) ?? new Set<string>();
    refs.add(`refs/heads/${state.worktree.branch}`);
    if (state.worktree.land_into) refs.add(`refs/heads/${state.worktree.land_into}`);
    wanted.set(state.worktree.repo, refs);
  }
  const tipsOf = new Map<string, Map<string, string> | undefined>();
  const waiting: AwaitingLanding[] = [];
  for (const { state, landed, present } of looked) {
    if (landed) continue;
    const tree = state.worktree;
    if (!tipsOf.has(tree.repo)) {
      tipsOf.set(
        tree.repo,
        branchTipsFromFiles(tree.repo, wanted.get(tree.repo) ?? []) ?? (await branchTips(tree.repo)),
      );
    }
    const tips = tipsOf.get(tree.repo);
    const commits =
      (tips ? measuredCommits(tree, state.worktree_measure, tips) : undefined) ??
      (await commitsToLand(tree, tips));
    const measured = state.worktree_measure;
    const bytes = measured ? (present ? measured.disk_bytes : 0) : undefined;
    waiting.push({
      ...(commits === 0 ? { nothing: true } : {}),
      id: state.id,
      project: state.project,
      branch: tree.branch,
      base: tree.land_into ?? tree.base,
      age_seconds: Math.max(0, Math.round((now.getTime() - finishedAt(state).getTime()) / 1000)),
      ...(bytes !== undefined ? { disk_bytes: bytes } : {}),
      worktree: tree.path,
    });
  }
  return waiting.sort((a, b) => b.age_seconds - a.age_seconds);
}

/**
 * Lines for `status`: what waits for the person's word, and how to give it; then the worktrees
 * with nothing to land, which only discard removes.
 */
export function formatAwaiting(waiting: readonly AwaitingLanding[] | undefined): string[] {
  const landable = (waiting ?? []).filter((item) => !item.nothing);
  const empty = (waiting ?? []).filter((item) => item.nothing);
  const lines: string[] = [];
  if (landable.length > 0) {
    lines.push(`${landable.length} awaiting landing (gstack-dispatch land <id>, or discard <id>):`);
    for (const item of landable) {
      lines.push(
        `  ⏸ ${item.id}  ${item.project}  ${item.branch} → ${item.base}  ${age(item.age_seconds)} ago  ${size(item.disk_bytes)}`,
      );
    }
  }
  if (empty.length > 0) {
    lines.push(
      `${empty.length} with nothing to land, no commits beyond the base (gstack-dispatch discard <id> removes the worktree):`,
    );
    for (const item of empty) {
      lines.push(
        `  ∅ ${item.id}  ${item.project}  ${item.branch}  ${age(item.age_seconds)} ago  ${size(item.disk_bytes)}`,
      );
    }
  }
  return lines;
}

/** When a dispatch finished: its state was last written then. */
export function finishedAt(state: Pick<SessionState, "updated_at">): Date {
  return new Date(state.updated_at);
}

function age(seconds: number): string {
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86_400)}d`;
}

function size(bytes: number | undefined): string {
  if (bytes === undefined) return "size not measured";
  if (bytes < 1024 * 1024) return `${Math.ceil(bytes / 1024)} KiB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
