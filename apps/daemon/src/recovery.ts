import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  type AgentCommand,
  type Dispatch,
  type GstackLayout,
  parseJson,
  parseValue,
  targetAgentPattern,
  writeFileAtomic,
} from "@gstack/contracts";
import {
  carryAttemptSpend,
  exists,
  readAllStates,
  readQueueFile,
  type SessionState,
  spawnNumber,
  writeState,
} from "@gstack/daemon-client";
import { auditHolds, type DaemonContext } from "./daemon-context";
import {
  type CompletionStepContext,
  carryOutCompletion,
  planCompletion,
  planFromReport,
  planPath,
  readPlan,
} from "./finish/completion";
import { stopMarkedAgents, stopRecordedAgent } from "./finish/orphans";
import { MAX_DISPATCH_BYTES, readClaimed } from "./intake/intake";
import {
  type ExitRecord,
  readExitRecord,
  readSupervisedExitRecord,
  writeExitRecord,
} from "./run/exit-record";

/** What recovery hands its findings to. */
export interface RecoveryParts {
  context: Pick<DaemonContext, "layout" | "now" | "log" | "audit"> & {
    settings?: Pick<DaemonContext["settings"], "agents">;
  };
  /** What finishing needs, to carry out a plan a crash interrupted. */
  completion: CompletionStepContext;
  maxDispatchBytes?: number;
  /**
   * Queues a session found on disk, behind those adopted before it; with `exited`, one whose
   * agent had ended, settled from that record instead of run again.
   */
  adopt(state: SessionState, dispatch: Dispatch, exited?: ExitRecord): void;
  /** Holds a dispatch found waiting for a person: no slot, its expiry (or accepted answer) taken up again. */
  adoptWaiting(state: SessionState, dispatch: Dispatch): void;
  /** True for an id already adopted. */
  adopted(id: string): boolean;
  /** Hands a claimed file that has no session yet to intake (`settled`: already named `{id}.json`). */
  takeClaimed(path: string, name: string, firstSeen: Date, settled: boolean): Promise<void>;
  /** Saves the queue's order once everything is adopted. */
  saveQueue(): Promise<void>;
}

/**
 * How the interrupted run of `state` ended: by the daemon's own exit record, else by its
 * supervisor's (the agent ended while no daemon followed it), then kept as the daemon's record.
 */
async function exitOf(
  layout: GstackLayout,
  state: SessionState,
  command: AgentCommand | undefined,
): Promise<ExitRecord | undefined> {
  const attempt = spawnNumber(state);
  const recorded = await readExitRecord(layout, state.id, attempt);
  if (recorded) return recorded;
  const supervised = readSupervisedExitRecord(
    layout,
    state.id,
    state.agent,
    attempt,
    state.started_at ?? state.updated_at,
    command,
  );
  if (supervised) await writeExitRecord(layout, state.id, supervised);
  return supervised;
}

/**
 * Start-up reconciliation of a state folder a stopped or crashed daemon left: a session marked
 * finished without a completion JSON (older code) gets exactly one; finishing a crash
 * interrupted is carried out from its plan; every dispatch not finished is queued again in its
 * old order, interrupted runs first (their agent, when still alive, stopped; the next run counts
 * as the next attempt); files claimed but never queued go back through intake.
 */
export async function recover(parts: RecoveryParts): Promise<void> {
  const { layout, now, log, audit } = parts.context;
  const order = await readQueueFile(layout);
  const states = await readAllStates(layout);
  for (const state of states) {
    if (state.status === "finished") {
      // Finished: its completion JSON must exist; older code could leave a session without one.
      if (await exists(layout.dispatch.completedJson(state.id))) {
        await rm(planPath(layout, state.id), { force: true });
      } else {
        await repairFinished(parts, state).catch((error: Error) =>
          log(`could not repair ${state.id} (finished without a completion): ${error.message}`),
        );
      }
      continue;
    }
    // Finishing that a crash interrupted is carried out from its plan, which holds the outcome
    // even when the dispatch file is gone.
    const plan = await readPlan(layout, state.id);
    if (!plan) continue;
    const read = await readDispatchOf(parts, state);
    const dispatch = "dispatch" in read ? read.dispatch : lostDispatch(state);
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
  // Agents a crashed daemon left running are stopped before anything runs again: by the pid and
  // group a session recorded, then by the run marker, which also finds an agent whose pid was
  // never recorded (the daemon was killed between its spawn and that write) and what it started.
  // Nothing runs again for a dispatch until its old agent is confirmed gone: a new attempt in the
  // same worktree beside the old agent could do the work twice.
  const stillAlive = new Set<string>();
  for (const state of unfinished) {
    if (state.pid === undefined || (state.status !== "running" && state.status !== "retrying")) continue;
    const stopped = await stopRecordedAgent(state);
    if (stopped !== undefined) {
      await audit("orphan_killed", {
        dispatch_id: state.id,
        pid: state.pid,
        detail: { pgid: stopped.group },
      });
      log(`killed the orphaned agent of ${state.id} (process group ${stopped.group})`);
      if (!stopped.gone) stillAlive.add(state.id);
    }
  }
  const marked = await stopMarkedAgents(layout.root, new Set(unfinished.map((state) => state.id)));
  for (const [id, pids] of marked.stopped) {
    await audit("orphan_killed", { dispatch_id: id, detail: { found_by: "run marker", pids } });
    log(
      `killed ${pids.length} orphaned agent process${pids.length === 1 ? "" : "es"} of ${id} (found by the run marker)`,
    );
  }
  for (const id of marked.alive) stillAlive.add(id);
  for (const id of stillAlive) {
    log(
      `${id}: its old agent is still alive after SIGKILL; the dispatch is left as it is and taken up at the next start`,
    );
  }
  for (const state of unfinished) {
    if (stillAlive.has(state.id)) continue;
    const dispatch = await readRecoveredDispatch(parts, state);
    if (!dispatch) continue;
    if (state.status === "awaiting") {
      await auditWaitOnce(layout, audit, state);
      parts.adoptWaiting(state, dispatch);
      await audit("recovered", {
        dispatch_id: state.id,
        detail: { was: "awaiting", attempt: state.attempt },
      });
      log(`recovered ${state.id} (waiting for an answer to its ${state.awaiting?.kind ?? "plan"})`);
      continue;
    }
    const wasRunning = state.status !== "queued";
    const exited = wasRunning
      ? await exitOf(layout, state, parts.context.settings?.agents?.[state.agent])
      : undefined;
    if (exited && !(exited.result.cancelled && exited.cancel_reason === "shutdown")) {
      // Its agent had ended and the exit was recorded: it is finished (or retried) from that,
      // never started again for this attempt. The state stays running until it is settled.
      delete state.pid;
      delete state.pgid;
      state.updated_at = now().toISOString();
      await writeState(layout, state);
      parts.adopt(state, dispatch, exited);
      await audit("recovered", {
        dispatch_id: state.id,
        detail: { was: "exited", attempt: state.attempt },
      });
      log(`recovered ${state.id} (its agent had ended; finishing from the recorded exit)`);
      continue;
    }
    const lastWritten = Date.parse(state.updated_at);
    if (wasRunning && state.clock_jump_ms === undefined && lastWritten - now().getTime() > 60_000) {
      // Written "later" than now: the clock went back while the daemon was down.
      state.clock_jump_ms = now().getTime() - lastWritten;
      log(`the system clock is behind ${state.id}'s last update (${state.updated_at}): it went back`);
    }
    if (wasRunning) {
      // The interrupted run counted as an attempt; the next one is told it resumes.
      state.attempt += 1;
      state.restarts = (state.restarts ?? 0) + 1;
      carryAttemptSpend(state);
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

/**
 * The dispatch of a session found on disk. When it cannot be read the session cannot run again:
 * it is finished as failed (a completion with the reason) and undefined is returned.
 */
async function readRecoveredDispatch(
  parts: RecoveryParts,
  state: SessionState,
): Promise<Dispatch | undefined> {
  const read = await readDispatchOf(parts, state);
  if ("dispatch" in read) return read.dispatch;
  await finishDamaged(parts, state, `cannot recover: ${read.error}`, { countCommits: true }).catch(
    (error: Error) =>
      parts.context.log(`could not finish ${state.id}, whose dispatch is unreadable: ${error.message}`),
  );
  return undefined;
}

/** Reads a session's dispatch from its claimed file or, once archived, the session folder. */
async function readDispatchOf(
  parts: RecoveryParts,
  state: SessionState,
): Promise<{ dispatch: Dispatch } | { error: string }> {
  const archived = join(parts.context.layout.dispatch.sessionDir(state.id), "dispatch.json");
  let lastError: Error | undefined;
  for (const path of state.claimed_file === archived ? [archived] : [state.claimed_file, archived]) {
    try {
      const text = await readClaimed(path, parts.maxDispatchBytes ?? MAX_DISPATCH_BYTES);
      const dispatch = parseJson("dispatch", text, { source: path });
      state.claimed_file = path;
      return { dispatch };
    } catch (error) {
      lastError = error as Error;
    }
  }
  return { error: lastError?.message.split("\n")[0] ?? "no dispatch file" };
}

/**
 * Gives a session that older code marked finished without a completion JSON exactly one: from
 * its plan when finishing had one, else from the report written before it, else a failed
 * completion saying the result is lost (error_kind `unknown`). Steps already done are not done
 * again (the appends look for their own line first), and a crash during the repair leaves a
 * plan the next start carries out.
 */
async function repairFinished(parts: RecoveryParts, state: SessionState): Promise<void> {
  const { layout, log, audit } = parts.context;
  const plan = await readPlan(layout, state.id);
  const read = await readDispatchOf(parts, state);
  const dispatch = "dispatch" in read ? read.dispatch : lostDispatch(state);
  if (plan) {
    log(`repairing ${state.id}: finished without a completion; carrying out its plan`);
    await audit("recovered", { dispatch_id: state.id, detail: { was: "finished", repaired_from: "plan" } });
    await carryOutCompletion(parts.completion, state, dispatch, plan, true);
    return;
  }
  const fromReport = await planFromReport(layout, state, dispatch);
  if (fromReport) {
    log(`repairing ${state.id}: finished without a completion; taking it from its report`);
    await audit("recovered", { dispatch_id: state.id, detail: { was: "finished", repaired_from: "report" } });
    await writeFileAtomic(planPath(layout, state.id), `${JSON.stringify(fromReport)}\n`);
    await carryOutCompletion(parts.completion, state, dispatch, fromReport, true);
    return;
  }
  await finishDamaged(
    parts,
    state,
    `state damaged: the session was marked finished${state.outcome ? ` (${state.outcome})` : ""} without a completion or a report, so its result is lost; repaired at start as failed`,
    { countCommits: false, dispatch, finishedAt: new Date(state.updated_at) },
  );
}

/**
 * Finishes a session that cannot run (again) as failed with error_kind `unknown` and `message`,
 * through the completion step, so it ends with exactly one completion like any other.
 */
async function finishDamaged(
  parts: RecoveryParts,
  state: SessionState,
  message: string,
  options: { countCommits: boolean; dispatch?: Dispatch; finishedAt?: Date },
): Promise<void> {
  const { layout, log, now, audit } = parts.context;
  const dispatch = options.dispatch ?? lostDispatch(state);
  const finishedAt =
    options.finishedAt && !Number.isNaN(options.finishedAt.getTime()) ? options.finishedAt : now();
  const plan = await planCompletion({
    layout,
    state,
    dispatch,
    status: "failed",
    outcome: { failure: { kind: "unknown", retryable: false, message, retryWithoutLearnings: false } },
    finishedAt,
    sessionTimeoutSeconds: 0,
    countCommits: options.countCommits,
  });
  log(`${state.id}: ${message}`);
  await audit("recovered", {
    dispatch_id: state.id,
    detail: { was: state.status, repaired_from: "nothing" },
  });
  await writeFileAtomic(planPath(layout, state.id), `${JSON.stringify(plan)}\n`);
  await carryOutCompletion(parts.completion, state, dispatch, plan, true);
}

/** A stand-in for a dispatch whose file is lost, from what the session state still knows. */
function lostDispatch(state: SessionState): Dispatch {
  return parseValue("dispatch", {
    id: state.id,
    dispatched_by: "unknown",
    task: "(the dispatch file was lost)",
    project: state.project || "unknown",
    project_dir: state.project_dir || "/",
    target_agent: targetAgentPattern.test(state.agent) ? state.agent : "claude",
  });
}

/**
 * The `awaiting` event of a wait, and the `answered` event of an answer accepted to it, each
 * written when a crash came between the state and its event (the state is written first), so
 * the audit log holds each round's wait and answer once.
 */
async function auditWaitOnce(
  layout: RecoveryParts["context"]["layout"],
  audit: RecoveryParts["context"]["audit"],
  state: SessionState,
): Promise<void> {
  const record = state.awaiting;
  if (!record) return;
  const answer = record.answer;
  // One read of the audit log finds both events of this round.
  const seen = new Set<unknown>();
  await auditHolds(
    layout,
    (event) => {
      if (event.dispatch_id !== state.id) return false;
      if ((event.detail as { round?: unknown } | undefined)?.round !== record.round) return false;
      seen.add(event.event);
      return seen.has("awaiting") && (!answer || seen.has("answered"));
    },
    `"${state.id}"`,
  );
  if (!seen.has("awaiting")) {
    await audit("awaiting", {
      dispatch_id: state.id,
      detail: {
        kind: record.kind,
        round: record.round,
        expires_at: record.expires_at,
        written: "at start-up",
      },
    });
  }
  // Likewise an answer: its acceptance is written to the state before its `answered` event, and
  // the restart acts on it, so the event is written here when a crash came in between.
  if (!answer || seen.has("answered")) return;
  await audit("answered", {
    dispatch_id: state.id,
    detail: { answer: answer.kind, round: record.round, written: "at start-up" },
  });
}
