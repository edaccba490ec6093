import { readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { GstackLayout } from "@gstack/contracts";
import {
  finishedAt,
  readAllStates,
  readMove,
  removeWorktree,
  runGit,
  type SessionState,
  type WorktreeRecord,
  worktreesRoot,
} from "@gstack/daemon-client";
import type { Audit } from "../daemon-context";

export { type AwaitingLanding, awaitingLanding, formatAwaiting } from "@gstack/daemon-client";

import {
  completeRecordedLanding,
  LandRefusal,
  type LandTrust,
  landDispatch,
  landingTrust,
  readLanding,
  untrustedCheckout,
} from "@gstack/daemon-client";

/**
 * At start-up: a landing whose record was written but whose audit event a kill cut off (with
 * the completion's mark) has those steps carried out, once.
 */
export async function finishRecordedLandings(
  layout: GstackLayout,
  options: LandTrust & { now: Date; log?: (line: string) => void },
): Promise<void> {
  const trust = options.trustedRepos ? { trustedRepos: options.trustedRepos } : {};
  const recorded = new Map<string, string>();
  for (const state of await readAllStates(layout)) {
    const landing = await readLanding(layout, state.id);
    if (landing) recorded.set(state.id, landing.landing === "discarded" ? "discarded" : "landed");
  }
  const audited = recorded.size > 0 ? await landingEventsAudited(layout) : new Set<string>();
  for (const [id, event] of recorded) {
    if (audited.has(`${event} ${id}`)) continue;
    try {
      await completeRecordedLanding(layout, id, { now: () => options.now, ...trust });
      options.log?.(`finished the record of ${id}'s landing (${event}) that a stop cut short`);
    } catch (error) {
      options.log?.(`the landing record of ${id} could not be finished: ${String(error)}`);
    }
  }
}

/**
 * After start-up, beside other work: a landing that was cut short while it moved a
 * checked-out branch is finished (the person asked for it; until then the checkout's index
 * stays locked), once and audited. A landing into the same checkout waits for it. One that
 * cannot be finished is logged with what the checkout holds and how to put it back.
 */
export async function finishCutLandings(
  layout: GstackLayout,
  options: LandTrust & { now: () => Date; log?: (line: string) => void; audit?: Audit },
): Promise<void> {
  for (const state of await readAllStates(layout)) {
    if (!(await readMove(layout, state.id)) || (await readLanding(layout, state.id))) continue;
    try {
      const landed = await landDispatch(layout, state.id, {
        now: options.now,
        ...(options.trustedRepos ? { trustedRepos: options.trustedRepos } : {}),
        ...(options.audit ? { audit: options.audit } : {}),
      });
      options.log?.(`finished a landing cut short: ${landed.message}`);
    } catch (error) {
      const why = error instanceof LandRefusal ? error.message : String(error);
      options.log?.(`a landing of ${state.id} was cut short and could not be finished: ${why}`);
    }
  }
}

/**
 * At start-up: finishes landing records a kill cut short (`finishRecordedLandings`), then
 * removes worktree folders no dispatch needs any more (landed, discarded, or left
 * by a dispatch the state root no longer knows), the folders of dispatches that waited longer
 * than `retentionDays` (their branches stay, so they can still be landed), and git's records of
 * worktrees whose folders are gone (`git worktree prune`). Never touches a dispatch that has not
 * finished. Returns the folders it removed.
 */
export async function pruneWorktrees(
  layout: GstackLayout,
  options: LandTrust & { now: Date; retentionDays?: number; log?: (line: string) => void },
): Promise<string[]> {
  await finishRecordedLandings(layout, options);
  const states = new Map<string, SessionState>();
  for (const state of await readAllStates(layout)) states.set(state.id, state);
  // git writes only in repositories trusted now (and still the ones the worktrees were made from).
  const trusted = await landingTrust(layout, options);
  const writable = new Map<string, Promise<boolean>>();
  const mayWrite = (tree: WorktreeRecord): Promise<boolean> => {
    const key = `${tree.repo}\0${tree.common_dir ?? ""}`;
    let answer = writable.get(key);
    if (!answer) {
      answer = untrustedCheckout(tree, trusted).then((reason) => {
        if (reason !== undefined)
          options.log?.(`no git command runs in ${tree.repo} while pruning: ${reason}`);
        return reason === undefined;
      });
      writable.set(key, answer);
    }
    return answer;
  };
  const repos = new Map<string, WorktreeRecord>();
  for (const state of states.values()) if (state.worktree) repos.set(state.worktree.repo, state.worktree);
  const removed: string[] = [];
  const root = worktreesRoot(layout.root);
  for (const project of await readdir(root).catch(() => [] as string[])) {
    for (const id of await readdir(join(root, project)).catch(() => [] as string[])) {
      const folder = join(root, project, id);
      const state = states.get(id);
      if (state && state.status !== "finished") continue;
      const expired =
        state?.worktree !== undefined &&
        options.retentionDays !== undefined &&
        options.now.getTime() - finishedAt(state).getTime() > options.retentionDays * 86_400_000;
      const done = state ? (await readLanding(layout, id)) !== undefined : false;
      if (state?.worktree && !done && !expired) continue;
      if (state?.worktree && (await mayWrite(state.worktree)))
        await removeWorktree(state.worktree.repo, folder);
      else await rm(folder, { recursive: true, force: true });
      removed.push(folder);
      options.log?.(
        `removed the worktree ${folder}${expired && !done ? ` after ${options.retentionDays} days (its branch ${state?.worktree?.branch} stays)` : ""}`,
      );
    }
  }
  for (const [repo, tree] of repos) if (await mayWrite(tree)) await runGit(repo, ["worktree", "prune"]);
  return removed;
}

/** The `landed` and `discarded` events in the audit log, as "event id", read once. */
async function landingEventsAudited(layout: GstackLayout): Promise<Set<string>> {
  const found = new Set<string>();
  const text = await readFile(layout.dispatch.audit, "utf8").catch(() => "");
  for (const line of text.split("\n")) {
    if (!line.includes('"landed"') && !line.includes('"discarded"')) continue;
    try {
      const entry = JSON.parse(line) as { event?: unknown; dispatch_id?: unknown };
      if (typeof entry.dispatch_id === "string") found.add(`${String(entry.event)} ${entry.dispatch_id}`);
    } catch {
      // A torn or foreign line: not an event.
    }
  }
  return found;
}
