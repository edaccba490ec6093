import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { type Dispatch, parseJson } from "@gstack/contracts";
import { type CompletionStepContext, carryOutCompletion, planPath, readPlan } from "./completion";
import type { DaemonContext } from "./daemon-context";
import { MAX_DISPATCH_BYTES, readClaimed } from "./intake";
import { stopRecordedAgent } from "./orphans";
import { readAllStates, readQueueFile, type SessionState, writeState } from "./session-state";

/** What recovery hands its findings to. */
export interface RecoveryParts {
  context: Pick<DaemonContext, "layout" | "now" | "log" | "audit">;
  /** What finishing needs, to carry out a plan a crash interrupted. */
  completion: CompletionStepContext;
  maxDispatchBytes?: number;
  /** Queues a session found on disk, behind those adopted before it. */
  adopt(state: SessionState, dispatch: Dispatch): void;
  /** True for an id already adopted. */
  adopted(id: string): boolean;
  /** Hands a claimed file that has no session yet to intake (`settled`: already named `{id}.json`). */
  takeClaimed(path: string, name: string, firstSeen: Date, settled: boolean): Promise<void>;
  /** Saves the queue's order once everything is adopted. */
  saveQueue(): Promise<void>;
}

/**
 * Start-up reconciliation of a state folder a stopped or crashed daemon left: finishing a crash
 * interrupted is carried out from its plan; every dispatch not finished is queued again in its
 * old order, interrupted runs first (their agent, when still alive, stopped; the next run counts
 * as the next attempt); files claimed but never queued go back through intake.
 */
export async function recover(parts: RecoveryParts): Promise<void> {
  const { layout, now, log, audit } = parts.context;
  const order = await readQueueFile(layout);
  const states = await readAllStates(layout);
  // Finishing that a crash interrupted is carried out from its plan first.
  for (const state of states) {
    const plan = await readPlan(layout, state.id);
    if (!plan) continue;
    if (state.status === "finished") {
      await rm(planPath(layout, state.id), { force: true });
      continue;
    }
    const dispatch = await readRecoveredDispatch(parts, state);
    if (!dispatch) continue;
    log(`finishing ${state.id}, interrupted while it was being finished`);
    await carryOutCompletion(parts.completion, state, dispatch, plan, true);
  }
  const unfinished = states.filter((state) => state.status !== "finished");
  const rank = (state: SessionState) => {
    const index = order.indexOf(state.id);
    // Interrupted runs go first, then the persisted queue order.
    return state.status === "queued" ? (index < 0 ? order.length : index) : -1;
  };
  unfinished.sort((a, b) => rank(a) - rank(b) || a.queued_at.localeCompare(b.queued_at));
  for (const state of unfinished) {
    const dispatch = await readRecoveredDispatch(parts, state);
    if (!dispatch) continue;
    if (state.pid !== undefined && (state.status === "running" || state.status === "retrying")) {
      const group = await stopRecordedAgent(state);
      if (group !== undefined) {
        await audit("orphan_killed", { dispatch_id: state.id, pid: state.pid, detail: { pgid: group } });
        log(`killed the orphaned agent of ${state.id} (process group ${group})`);
      }
    }
    const wasRunning = state.status !== "queued";
    if (wasRunning) {
      // The interrupted run counted as an attempt; the next one is told it resumes.
      state.attempt += 1;
      state.restarts = (state.restarts ?? 0) + 1;
    }
    state.status = "queued";
    delete state.pid;
    delete state.pgid;
    state.updated_at = now().toISOString();
    await writeState(layout, state);
    parts.adopt(state, dispatch);
    await audit("recovered", {
      dispatch_id: state.id,
      detail: { was: wasRunning ? "running" : "queued", attempt: state.attempt },
    });
    log(`recovered ${state.id} (${wasRunning ? "interrupted run, starting again" : "still queued"})`);
  }
  // Claimed files with no state yet: the daemon stopped between claim and queue.
  for (const name of await readdir(layout.dispatch.claimed)) {
    const path = join(layout.dispatch.claimed, name);
    if (name.startsWith(".claim-")) {
      await parts.takeClaimed(path, name, now(), false);
      continue;
    }
    if (name.startsWith(".offer-")) {
      // An offer that never got its final name was never accepted: its caller heard no yes.
      await rm(path, { force: true });
      continue;
    }
    const id = name.replace(/\.json$/, "");
    if (!name.endsWith(".json") || parts.adopted(id)) continue;
    if (states.some((state) => state.id === id)) continue;
    await parts.takeClaimed(path, name, now(), true);
  }
  await parts.saveQueue();
}

/** The dispatch of a session found on disk, or undefined (audited, marked failed) when it cannot be read. */
async function readRecoveredDispatch(
  parts: RecoveryParts,
  state: SessionState,
): Promise<Dispatch | undefined> {
  const { layout, audit } = parts.context;
  const archived = join(layout.dispatch.sessionDir(state.id), "dispatch.json");
  let lastError: Error | undefined;
  for (const path of state.claimed_file === archived ? [archived] : [state.claimed_file, archived]) {
    try {
      const text = await readClaimed(path, parts.maxDispatchBytes ?? MAX_DISPATCH_BYTES);
      const dispatch = parseJson("dispatch", text, { source: path });
      state.claimed_file = path;
      return dispatch;
    } catch (error) {
      lastError = error as Error;
    }
  }
  await audit("failed", {
    dispatch_id: state.id,
    reason: `cannot recover: ${lastError?.message ?? "no dispatch file"}`,
  });
  state.status = "finished";
  state.outcome = "failed";
  await writeState(layout, state);
  await rm(planPath(layout, state.id), { force: true });
  return undefined;
}
