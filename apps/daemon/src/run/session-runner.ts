import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { CompletionStatus, Dispatch } from "@gstack/contracts";
import { type AnswerInput, AnswerRefusal, answerUsage } from "../await/answer";
import {
  type AwaitingRecord,
  awaitingNotice,
  expiryOf,
  howToAnswerPlan,
  removeAwaitingNotice,
  writeAwaitingNotice,
  writeAwaitingReport,
} from "../await/awaiting";
import { type GateItem, gateLabel, gateUsage, parseGateReply } from "../await/gate-reply";
import { answerPrompt, mustPlanFirst, planInstructions } from "../await/plan-mode";
import type { DaemonContext } from "../daemon-context";
import {
  type CompletionStepContext,
  carryOutCompletion,
  planCompletion,
  readCompletionStatus,
  readPlan,
} from "../finish/completion";
import { commitsSince, headAndBranch } from "../git";
import { gstackRunOf } from "../gstack-run/gstack-run-of";
import { unattendedEnvironment } from "../gstack-run/unattended-environment";
import { expiresAt } from "../intake/intake";
import { type SessionState, spawnNumber, workDir, writeQueueFile, writeState } from "../session-state";
import { budgetOf, carryAttemptSpend, formatUsd, remainingBudget } from "../spend/spend";
import { prepareWorkspace } from "../worktree/prepare";
import type { AgentFailure, AgentRunResult, AgentStarter, RunningAgent } from "./agent-types";
import { ClockWatch, monotonicNow } from "./clock";
import { isDiskFull } from "./disk-space";
import { DispatchQueue } from "./dispatch-queue";
import { type ExitRecord, supervisedExitPath, writeExitRecord } from "./exit-record";
import { untrustedAtLaunch } from "./launch-trust";
import { buildPrompt } from "./prompt";

/**
 * What a cancel did: `cancelling` (a running agent was signalled, or a launch under way stops
 * before its spawn; the completion follows), `cancelled` (a queued dispatch was finished as
 * cancelled), `pending` (the dispatch is still in `dispatch/` or being claimed: applied when it
 * is taken), `finished` (it had already ended; `status` is its terminal status and nothing
 * changed) or `unknown` (nobody knows the id).
 */
export interface CancelOutcome {
  outcome: "cancelling" | "cancelled" | "pending" | "finished" | "unknown";
  status?: CompletionStatus;
}

/** A dispatch the daemon holds: queued, launching, running, waiting to retry or finishing. */
export interface LiveSession {
  state: SessionState;
  dispatch: Dispatch;
  agent?: RunningAgent;
  cancelReason?: "cancel" | "shutdown";
  cancelMessage?: string;
  firstStarted?: number;
  /** When it first ran in this process, on the monotonic clock, and what it had run before. */
  runClock?: { startedMs: number; ranBeforeMs: number; watch: ClockWatch };
  retryTimer?: NodeJS.Timeout;
  persistTimer?: NodeJS.Timeout;
  /** Set once finishing has begun; settles when the completion is written. */
  finishing?: Promise<void>;
  /** Set from an agent's start until its result has been taken and the run settled. */
  runOver?: Promise<void>;
  /** A run recovery found ended (its exit recorded): settled from the record, never run again. */
  exited?: ExitRecord;
  /** Ends a wait nobody answered, when it expires. */
  expiryTimer?: NodeJS.Timeout;
}

/** How sessions are run; everything but `completion` has a default. */
export interface SessionRunnerOptions {
  startAgent: AgentStarter;
  /** Extra environment for agents. */
  agentEnv?: Record<string, string>;
  /** Wait before retrying after a rate limit (default 30 s) or another retryable failure (default 5 s). */
  retryDelayMs?: { rateLimit: number; other: number };
  /** What finishing needs (the delivery exists only once the daemon started, so it is asked each time). */
  completion(): CompletionStepContext;
  /** Told each time a session leaves (finished, or queued again by a stop). */
  onSessionLeft?: () => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs the sessions: admits a taken dispatch to the queue, launches agents as slots free up
 * (the attempt on disk before the spawn), keeps their progress on disk, settles each run
 * (retry once, or queue it again when the daemon stops) and hands the outcome to the
 * completion step. Cancels of a live session are carried out here.
 */
export class SessionRunner {
  readonly queue: DispatchQueue;
  private readonly sessions = new Map<string, LiveSession>();

  constructor(
    private readonly context: DaemonContext,
    private readonly options: SessionRunnerOptions,
  ) {
    this.queue = new DispatchQueue({
      maxConcurrent: () => context.settings.max_concurrent,
      save: (ids) => writeQueueFile(context.layout, ids),
      onSaveError: (error) => context.log(`could not save the queue: ${error.message}`),
    });
  }

  /** How long the last few dispatches that ran took, in seconds (for queue estimates). */
  private readonly recentRunSeconds: number[] = [];

  /**
   * A rough wait, in seconds, before a dispatch joining the queue now would start: the queue
   * ahead of it over the slots, times the median run of the last few dispatches (60 s before
   * any has ended). Used for `retry_after_seconds`.
   */
  estimatedWaitSeconds(): number {
    const sorted = [...this.recentRunSeconds].sort((a, b) => a - b);
    const typical = sorted.length > 0 ? Math.max(1, sorted[Math.floor(sorted.length / 2)] ?? 60) : 60;
    const rounds = Math.ceil((this.queue.length + 1) / Math.max(1, this.context.settings.max_concurrent));
    return Math.min(3600, Math.max(5, rounds * typical));
  }

  /** The place of a queued dispatch (1 starts next), or undefined when it is not waiting. */
  position(id: string): number | undefined {
    const index = this.queue.ids.indexOf(id);
    return index < 0 ? undefined : index + 1;
  }

  get(id: string): LiveSession | undefined {
    return this.sessions.get(id);
  }

  /** Dispatches waiting for a slot. */
  get waiting(): number {
    return this.queue.length;
  }

  has(id: string): boolean {
    return this.sessions.has(id);
  }

  /** Sessions holding a slot (launching, running, settling or finishing). */
  get active(): number {
    return this.queue.active;
  }

  /** The states of every session the runner holds, queued ones included. */
  liveStates(): SessionState[] {
    return [...this.sessions.values()].map((session) => session.state);
  }

  /** Ids of running and queued dispatches. */
  snapshot(): { running: string[]; queued: string[] } {
    return {
      running: [...this.sessions.values()]
        .filter((session) => session.agent)
        .map((session) => session.state.id),
      queued: [...this.queue.ids],
    };
  }

  /**
   * Takes a dispatch intake accepted (its `claimed/{id}.json` in place) into the queue and
   * starts it when a slot is free. A cancel that came before it is applied at once. Returns
   * its position in the line, counting from 1.
   */
  async admit(
    dispatch: Dispatch,
    admission: { projectDir: string; firstSeen: Date; source?: string; pendingCancel?: string },
  ): Promise<number> {
    const { context } = this;
    const now = context.now().toISOString();
    const state: SessionState = {
      id: dispatch.id,
      project: dispatch.project,
      project_dir: admission.projectDir,
      agent: dispatch.target_agent,
      status: "queued",
      claimed_file: context.layout.dispatch.claimedFile(dispatch.id),
      first_seen: admission.firstSeen.toISOString(),
      queued_at: now,
      attempt: 1,
      retries: 0,
      include_learnings: true,
      updated_at: now,
    };
    const budget = budgetOf(dispatch, context.settings);
    if (budget !== undefined) state.budget_usd = budget;
    if (await mustPlanFirst(dispatch, admission.projectDir, context.settings)) {
      state.phase = "plan";
      state.plan_round = 1;
    }
    // A dispatch that starts at once is written by its launch, with the attempt; writing it as
    // queued first would put a second synced write before the spawn. A crash in between leaves
    // only the claimed file, which recovery takes again as a first attempt.
    const startsAtOnce =
      !context.stopping &&
      this.queue.length === 0 &&
      this.queue.hasFreeSlot() &&
      admission.pendingCancel === undefined;
    // With the disk full the dispatch is queued in memory only: the claimed file is on disk, and
    // a crash before its state is written makes recovery take it again as a first attempt.
    if (!startsAtOnce)
      await writeState(context.layout, state).catch((error) =>
        this.unlessDiskFull(error, `queueing ${dispatch.id}`),
      );
    const session: LiveSession = { state, dispatch };
    this.sessions.set(dispatch.id, session);
    const position = this.queue.push(dispatch.id);
    await context.audit("queued", {
      dispatch_id: dispatch.id,
      detail: { position, ...(admission.source !== undefined ? { source: admission.source } : {}) },
    });
    context.log(`queued ${dispatch.id} (${dispatch.project}: ${dispatch.task.split("\n")[0]?.slice(0, 60)})`);
    if (admission.pendingCancel !== undefined) {
      await this.cancel(session, admission.pendingCancel);
      return position;
    }
    this.pump();
    await this.queue.save();
    return position;
  }

  /**
   * Queues a session recovery found on disk (its state already written), behind those before it.
   * With `exited`, its agent had ended: its slot settles the recorded result instead of a run.
   */
  adopt(state: SessionState, dispatch: Dispatch, exited?: ExitRecord): void {
    this.sessions.set(state.id, { state, dispatch, ...(exited ? { exited } : {}) });
    this.queue.push(state.id);
  }

  /** Launches waiting sessions while slots are free. */
  pump(): void {
    // Nothing starts while the disk is full; the disk's probe pumps again when there is room.
    while (!this.context.stopping && !this.context.disk?.full) {
      const id = this.queue.next();
      if (id === undefined) return;
      const session = this.sessions.get(id);
      if (!session) {
        this.queue.releaseSlot(id);
        continue;
      }
      void this.queue.save();
      void this.launch(session).catch((error: Error) => this.launchFailed(session, error, true));
    }
  }

  /**
   * A launch that threw: for lack of space the dispatch goes back first in line (its state on
   * disk as it was) and waits for room; anything else fails it.
   */
  private launchFailed(session: LiveSession, error: Error, log: boolean): void {
    const { state } = session;
    if (isDiskFull(error) && this.context.disk && !session.finishing) {
      this.context.disk.noteFull(`starting ${state.id}`, error);
      state.status = "queued";
      delete state.pid;
      delete state.pgid;
      this.queue.releaseSlot(state.id);
      this.queue.putFirst(state.id);
      this.options.onSessionLeft?.();
      return;
    }
    if (log) this.context.log(`could not start ${state.id}: ${error.message}`);
    void this.finish(session, "failed", { failure: spawnFailure(error) }).catch((failure: Error) =>
      this.context.log(`could not finish ${state.id}: ${failure.message}`),
    );
  }

  /** Swallows a failed write when the disk is full (noting it); rethrows anything else. */
  private unlessDiskFull(error: unknown, what: string): void {
    if (!isDiskFull(error) || !this.context.disk) throw error;
    this.context.disk.noteFull(what, error);
  }

  private async launch(session: LiveSession): Promise<void> {
    const { context } = this;
    const { state, dispatch } = session;
    const { settings, layout } = context;
    if (session.exited) {
      const { result, cancel_reason: reason } = session.exited;
      session.exited = undefined;
      if (reason) session.cancelReason = reason;
      context.log(
        `finishing ${state.id} from its recorded exit (${describeStart(state)}), not running it again`,
      );
      await this.settle(session, result);
      return;
    }
    const expiry = expiresAt(dispatch, new Date(state.first_seen));
    // Only before its first start: a plan approved after the dispatch's ttl is carried out.
    if (spawnNumber(state) === 1 && expiry && expiry.getTime() <= context.now().getTime()) {
      await context.audit("expired", {
        dispatch_id: state.id,
        reason: `expired at ${expiry.toISOString()} while queued`,
      });
      await this.finish(session, "cancelled", {
        failure: {
          kind: "cancelled",
          retryable: false,
          message: `expired at ${expiry.toISOString()} before it could start`,
          retryWithoutLearnings: false,
        },
      });
      return;
    }
    // Taken from the line now, in queue order, whatever the checks below take.
    const takenAt = context.now().toISOString();
    if (await this.refusedAtLaunch(session)) return;
    // The attempt is on disk before the agent starts, so a crash from here on counts it; the
    // write overlaps the git queries below.
    state.status = state.attempt > 1 ? "retrying" : "running";
    state.updated_at = context.now().toISOString();
    const persisted = writeState(layout, state);
    // Awaited below, after the git queries; a failure meanwhile must not count as unhandled.
    persisted.catch(() => undefined);
    const firstStart = state.started_at === undefined;
    state.started_at ??= takenAt;
    // The dispatch's own worktree (made once, found again on a retry or after a crash).
    await persisted;
    await prepareWorkspace(context, state, dispatch);
    if (firstStart && !state.worktree) {
      const { commit: baseSha, branch } = await headAndBranch(state.project_dir);
      if (baseSha) state.base_sha = baseSha;
      if (branch) state.branch = branch;
    }
    if (state.attempt > 1 && state.run?.attempt !== state.attempt) {
      // Each attempt's own start, so what it made can be told from what earlier ones made.
      const { commit: head } = await headAndBranch(workDir(state));
      state.run = { attempt: state.attempt, ...(head ? { base_sha: head } : {}) };
    }
    session.firstStarted ??= new Date(state.started_at).getTime();
    const monotonic = () => monotonicNow(context);
    session.runClock ??= {
      startedMs: monotonic(),
      ranBeforeMs: state.ran_ms ?? 0,
      watch: new ClockWatch(context.now, monotonic),
    };
    const agentConfig = settings.agents?.[state.agent];
    const resume =
      (state.restarts ?? 0) > 0
        ? {
            ...(state.branch ? { branch: state.branch } : {}),
            commits: (await commitsSince(workDir(state), state.base_sha)).map(
              (commit) => `${commit.sha.slice(0, 7)} ${commit.subject}`,
            ),
          }
        : undefined;
    const planOnly = state.phase === "plan";
    const prompt = state.continue_with
      ? answerPrompt(state.continue_with.answer)
      : [
          buildPrompt(dispatch, {
            dispatchFile: state.claimed_file,
            includeLearnings: state.include_learnings,
            attempt: state.attempt,
            ...(resume ? { resume } : {}),
          }),
          ...(planOnly ? ["", planInstructions()] : []),
        ].join("\n");
    await persisted;
    const sessionDir = layout.dispatch.sessionDir(state.id);
    // In place, one agent at a time per checkout: a second waits (in its slot) for the first.
    const release = state.in_place ? await this.holdCheckout(state.project_dir) : () => undefined;
    // A cancel that came during the launch (it found no agent to signal) ends it unstarted.
    const cancelRequested = () => session.cancelReason === "cancel";
    const finishUnstarted = async () => {
      release();
      await this.finish(session, "cancelled", {
        failure: {
          kind: "cancelled",
          retryable: false,
          message: session.cancelMessage ?? "cancel requested",
          retryWithoutLearnings: false,
        },
      });
    };
    if (cancelRequested()) {
      await finishUnstarted();
      return;
    }
    const budgetLeft = remainingBudget(state.budget_usd, state.spent_usd);
    if (budgetLeft === 0) {
      // Earlier attempts spent the whole cap: another would spend past it.
      release();
      await this.finish(session, "failed", {
        failure: {
          kind: "budget_exhausted",
          retryable: false,
          message: `Spent ${formatUsd(state.spent_usd ?? 0)} of its ${formatUsd(state.budget_usd ?? 0)} budget before this attempt; not started again.`,
          retryWithoutLearnings: false,
        },
      });
      return;
    }
    // Checked again at the last moment: the git queries above took time.
    if (await this.refusedAtLaunch(session)) {
      release();
      return;
    }
    if (state.phase !== undefined && state.agent !== "claude") {
      release();
      await this.finish(session, "failed", {
        failure: {
          kind: "spawn_error",
          retryable: false,
          message: `this dispatch must be planned and approved first, and only Claude Code can plan read-only (its agent is ${state.agent})`,
          retryWithoutLearnings: false,
        },
        countCommits: false,
      });
      return;
    }
    // Looked at again with nothing awaited between here and the spawn: a cancel during the
    // checks above found no agent to signal, and the agent started after it would run on.
    if (cancelRequested()) {
      await finishUnstarted();
      return;
    }
    const resumeId = state.continue_with?.session_id ?? resumeSessionId(state);
    const { environment } = context;
    let agent: RunningAgent;
    try {
      agent = this.options.startAgent({
        agent: state.agent,
        prompt,
        cwd: workDir(state),
        ...(resumeId ? { resumeSessionId: resumeId } : {}),
        ...(planOnly ? { planOnly: true } : {}),
        env: {
          ...agentConfig?.env,
          ...this.options.agentEnv,
          ...unattendedEnvironment({
            dispatchId: state.id,
            stateRoot: layout.root,
            ...(dispatch.reply_to ? { openclawSession: dispatch.reply_to.session_key } : {}),
          }),
        },
        allowedTools: settings.allowed_tools ?? [],
        disallowedTools: environment.disallowedTools,
        ...(state.agent !== "claude" && agentConfig ? { command: agentConfig.command } : {}),
        ...(environment.claudeBinary ? { binary: environment.claudeBinary } : {}),
        // Measured on the monotonic clock, across restarts: a moved wall clock times out nothing.
        timeoutMs: Math.max(1000, settings.session_timeout_seconds * 1000 - this.ranMs(session)),
        streamFile: join(sessionDir, `stream-${spawnNumber(state)}.jsonl`),
        exitFile: supervisedExitPath(layout, state.id, spawnNumber(state)),
        ...(budgetLeft !== undefined ? { budgetUsd: budgetLeft } : {}),
        onProgress: (progress) => {
          state.progress = progress;
          this.schedulePersist(session);
        },
      });
    } catch (error) {
      release();
      throw error;
    }
    session.agent = agent;
    let markRunOver!: () => void;
    session.runOver = new Promise<void>((resolve) => {
      markRunOver = resolve;
    });
    try {
      state.status = state.attempt > 1 ? "retrying" : "running";
      if (agent.pid > 1) {
        state.pid = agent.pid;
        state.pgid = agent.pid;
      }
      state.updated_at = context.now().toISOString();
      // The agent runs: a write failing for space now must not fail or queue it again.
      await writeState(layout, state).catch((error) =>
        this.unlessDiskFull(error, `recording ${state.id}'s agent`),
      );
      await context.audit("spawned", {
        dispatch_id: state.id,
        pid: agent.pid,
        detail: {
          attempt: state.attempt,
          ...(state.rounds ? { rounds: state.rounds } : {}),
          agent: state.agent,
        },
      });
      context.log(`started ${state.id} with ${state.agent} (pid ${agent.pid}, ${describeStart(state)})`);
      await this.settleRun(session, agent);
    } finally {
      session.runOver = undefined;
      markRunOver();
      release();
    }
  }

  /**
   * Trust is checked again right before an agent starts (see `run/launch-trust.ts`): the folder
   * and the repository it belongs to, and once a worktree is made, the repository it was made
   * from. A session no longer trusted ends failed, its reason in the report and the audit log,
   * and no git command runs in the folder. Returns true when it was refused.
   */
  private async refusedAtLaunch(session: LiveSession): Promise<boolean> {
    const { context } = this;
    const { state } = session;
    const trusted = context.currentTrustedRepos
      ? await context.currentTrustedRepos()
      : context.settings.trusted_repos;
    const reason = await untrustedAtLaunch(state.project_dir, trusted, state.worktree);
    if (reason === undefined) return false;
    const message = `refused at launch: ${reason}`;
    await context.audit("rejected", {
      dispatch_id: state.id,
      reason: message,
      detail: { rule: "trusted-repos" },
    });
    context.log(`refused ${state.id} at launch: ${reason}`);
    await this.finish(session, "failed", {
      failure: { kind: "spawn_error", retryable: false, message, retryWithoutLearnings: false },
      countCommits: false,
    });
    return true;
  }

  /** Checkouts an in-place agent is working in, each released when its run has settled. */
  private readonly checkouts = new Map<string, Promise<void>>();

  private async holdCheckout(folder: string): Promise<() => void> {
    for (let held = this.checkouts.get(folder); held; held = this.checkouts.get(folder)) await held;
    let release!: () => void;
    this.checkouts.set(
      folder,
      new Promise<void>((resolve) => {
        release = () => {
          if (this.checkouts.get(folder) === done) this.checkouts.delete(folder);
          resolve();
        };
      }),
    );
    const done = this.checkouts.get(folder);
    return release;
  }

  /** Takes an agent's result when it ends and settles the run. */
  private async settleRun(session: LiveSession, agent: RunningAgent): Promise<void> {
    const { state } = session;
    const result = await agent.done;
    // Recorded before anything else: a crash from here on finishes the dispatch at the next
    // start instead of starting its agent again.
    await writeExitRecord(this.context.layout, state.id, {
      attempt: spawnNumber(state),
      result,
      ...(session.cancelReason ? { cancel_reason: session.cancelReason } : {}),
    }).catch((error: Error) => this.context.log(`could not record how ${state.id} ended: ${error.message}`));
    session.agent = undefined;
    this.noteRunTime(session);
    if (session.persistTimer) clearTimeout(session.persistTimer);
    session.persistTimer = undefined;
    state.progress = result.progress;
    // From here the run's outcome is decided by its result, not by a cancel arriving now.
    await this.settle(session, result);
  }

  /** How long the session has run, on the monotonic clock, over every daemon that ran it. */
  private ranMs(session: LiveSession): number {
    const clock = session.runClock;
    if (!clock) return session.state.ran_ms ?? 0;
    return clock.ranBeforeMs + (monotonicNow(this.context) - clock.startedMs);
  }

  /** Puts the run time, and a jump of the wall clock seen meanwhile, in the state to be written. */
  private noteRunTime(session: LiveSession): void {
    const { state } = session;
    state.ran_ms = Math.round(this.ranMs(session));
    const jump = session.runClock?.watch.jumpMs() ?? 0;
    if (jump !== 0 && state.clock_jump_ms === undefined) {
      state.clock_jump_ms = jump;
      this.context.log(
        `the system clock moved while ${state.id} ran (${Math.round(jump / 1000)} s); its times may be off`,
      );
    }
  }

  /** Writes a running session's progress at most every half second. */
  private schedulePersist(session: LiveSession): void {
    if (session.persistTimer) return;
    session.persistTimer = setTimeout(() => {
      session.persistTimer = undefined;
      this.noteRunTime(session);
      session.state.updated_at = this.context.now().toISOString();
      void writeState(this.context.layout, session.state).catch(() => undefined);
    }, 500);
  }

  private async settle(session: LiveSession, result: AgentRunResult): Promise<void> {
    const { context } = this;
    const { state } = session;
    if (result.cancelled && session.cancelReason === "shutdown") {
      // Interrupted by the daemon stopping: keep it for the next start.
      carryAttemptSpend(state);
      state.status = "queued";
      delete state.pid;
      delete state.pgid;
      await writeState(context.layout, state);
      this.queue.releaseSlot(state.id);
      this.queue.putFirst(state.id);
      await this.queue.save();
      await context.audit("cancelled", {
        dispatch_id: state.id,
        reason: "daemon stopping; queued again for the next start",
      });
      this.sessions.delete(state.id);
      this.options.onSessionLeft?.();
      return;
    }
    if (result.cancelled) {
      await this.finish(session, "cancelled", { result });
      return;
    }
    if (result.timedOut) {
      await this.finish(session, "timeout", { result });
      return;
    }
    const failure = result.failure ?? (result.exitCode === 0 ? undefined : unknownFailure(result));
    if (!failure && state.phase === "plan") {
      await this.startWaiting(session, result);
      return;
    }
    if (!failure) {
      const gate = await this.gateOf(session, result).catch((error: Error) => {
        context.log(`could not read the gstack gate of ${state.id}: ${error.message}`);
        return undefined;
      });
      if (gate) {
        await this.startWaiting(session, result, gate);
        return;
      }
    }
    if (!failure) {
      await this.finish(session, "completed", { result });
      return;
    }
    state.last_failure = { kind: failure.kind, message: failure.message };
    if (failure.retryable && state.retries === 0 && !context.stopping) {
      state.retries = 1;
      carryAttemptSpend(state);
      state.attempt += 1;
      if (failure.retryWithoutLearnings) state.include_learnings = false;
      state.status = "retrying";
      delete state.pid;
      await writeState(context.layout, state);
      const delays = this.options.retryDelayMs ?? { rateLimit: 30_000, other: 5_000 };
      const wait = failure.kind === "rate_limit" ? delays.rateLimit : delays.other;
      await context.audit("retried", {
        dispatch_id: state.id,
        reason: `${failure.kind}: ${failure.message.slice(0, 300)}`,
        detail: { attempt: state.attempt, delay_ms: wait, without_learnings: !state.include_learnings },
      });
      context.log(`retrying ${state.id} in ${Math.round(wait / 1000)} s after ${failure.kind}`);
      session.retryTimer = setTimeout(() => {
        session.retryTimer = undefined;
        if (context.stopping) {
          void this.settle(session, { ...result, cancelled: true });
          return;
        }
        void this.launch(session).catch((error: Error) => this.launchFailed(session, error, false));
      }, wait);
      session.cancelReason = context.stopping ? "shutdown" : session.cancelReason;
      return;
    }
    await this.finish(session, "failed", { result, failure });
  }

  /** Ends a session through the completion step (once, however often asked), then frees its slot. */
  finish(
    session: LiveSession,
    status: CompletionStatus,
    outcome: { result?: AgentRunResult; failure?: AgentFailure; countCommits?: false },
  ): Promise<void> {
    session.finishing ??= this.finishNow(session, status, outcome);
    return session.finishing;
  }

  private async finishNow(
    session: LiveSession,
    status: CompletionStatus,
    outcome: { result?: AgentRunResult; failure?: AgentFailure; countCommits?: false },
  ): Promise<void> {
    const { context } = this;
    const { state, dispatch } = session;
    if (session.expiryTimer) clearTimeout(session.expiryTimer);
    session.expiryTimer = undefined;
    const plan = await planCompletion({
      layout: context.layout,
      state,
      dispatch,
      status,
      outcome,
      finishedAt: context.now(),
      sessionTimeoutSeconds: context.settings.session_timeout_seconds,
      ...(outcome.countCommits === false ? { countCommits: false } : {}),
    });
    // A step failing for space waits for room, its slot given back meanwhile, then goes on from
    // the plan on disk (steps done are not done again); the dispatch is never failed for it.
    let resumed = false;
    for (;;) {
      try {
        const current = resumed ? ((await readPlan(context.layout, state.id)) ?? plan) : plan;
        await carryOutCompletion(this.options.completion(), state, dispatch, current, resumed);
        break;
      } catch (error) {
        if (!isDiskFull(error) || !context.disk) throw error;
        context.disk.noteFull(`finishing ${state.id}`, error);
        this.queue.releaseSlot(state.id);
        if (!(await context.disk.waitForRoom())) throw error;
        resumed = (await readPlan(context.layout, state.id)) !== undefined;
      }
    }
    // A dispatch that waited no longer does: its waiting notice goes (readers skip a stale one anyway).
    await removeAwaitingNotice(context.layout, state.id);
    if (state.started_at) {
      this.recentRunSeconds.push(plan.completion.duration);
      if (this.recentRunSeconds.length > 20) this.recentRunSeconds.shift();
    }
    this.queue.releaseSlot(state.id);
    this.sessions.delete(state.id);
    this.pump();
    if (context.stopping) this.options.onSessionLeft?.();
  }

  /**
   * Cancels a live session: a running agent is signalled, a launch under way is told to stop
   * before its spawn, a waiting one is finished as cancelled, and one already finishing is
   * left to finish.
   */
  async cancel(session: LiveSession, reason: string): Promise<CancelOutcome> {
    const { context } = this;
    const id = session.state.id;
    if (session.runOver && !session.finishing && (!session.agent || session.agent.ended?.())) {
      // The agent has exited and its result is being read or settled: the cancel is too late
      // for this run. Once the run is settled, decide again: it has ended, or a retry waits
      // that can still be stopped.
      await session.runOver;
      if (!this.sessions.has(id) && !session.finishing) {
        const ended = await readCompletionStatus(context.layout.dispatch.completedJson(id));
        return ended
          ? { outcome: "finished", ...(ended.status ? { status: ended.status } : {}) }
          : { outcome: "unknown" };
      }
      return this.cancel(session, reason);
    }
    if (session.finishing) {
      // Its outcome is already decided: the cancel changes nothing.
      await session.finishing;
      const finished = await readCompletionStatus(context.layout.dispatch.completedJson(id));
      return { outcome: "finished", ...(finished?.status ? { status: finished.status } : {}) };
    }
    if (session.agent) {
      session.cancelReason = "cancel";
      context.log(`cancelling ${id}: ${reason}`);
      session.agent.cancel(reason);
      return { outcome: "cancelling" };
    }
    if (this.queue.holdsSlot(id) && !session.retryTimer) {
      // Being launched: the launch sees this before it starts the agent.
      session.cancelReason = "cancel";
      session.cancelMessage = reason;
      context.log(`cancelling ${id}: ${reason}`);
      return { outcome: "cancelling" };
    }
    this.queue.remove(id);
    if (session.retryTimer) clearTimeout(session.retryTimer);
    session.retryTimer = undefined;
    await this.queue.save();
    await this.finish(session, "cancelled", {
      failure: { kind: "cancelled", retryable: false, message: reason, retryWithoutLearnings: false },
    });
    return { outcome: "cancelled", status: "cancelled" };
  }

  /**
   * A plan is made: the dispatch waits for a person, holding no slot. The wait, with the agent
   * session an answer continues, is on disk before the slot is given back; the plan is the
   * waiting report (`sessions/{id}/awaiting.md`, and the snapshot's `awaiting`).
   */
  private async startWaiting(
    session: LiveSession,
    result: AgentRunResult,
    gate?: AwaitingRecord["gate"],
  ): Promise<void> {
    const { context } = this;
    const { state } = session;
    const since = context.now();
    const sessionId = result.progress.sessionId ?? state.continue_with?.session_id;
    const record: AwaitingRecord = {
      kind: gate ? "gate" : "plan",
      since: since.toISOString(),
      expires_at: expiryOf(since, context.settings.awaiting_expiry_hours).toISOString(),
      round: gate ? gate.gate_rev : (state.plan_round ?? 1),
      summary: gate ? gateSummary(gate) : (result.result ?? result.progress.lastText ?? ""),
      how_to_answer: gate ? gateUsage(state.id, gate.items) : howToAnswerPlan(state.id),
      ...(sessionId ? { session_id: sessionId } : {}),
      ...(gate ? { gate } : {}),
    };
    carryAttemptSpend(state);
    state.status = "awaiting";
    state.awaiting = record;
    delete state.continue_with;
    delete state.pid;
    delete state.pgid;
    state.updated_at = since.toISOString();
    // The report first: whoever sees the state waiting finds the report beside it.
    await writeAwaitingReport(context.layout, state.id, state.project, record);
    await writeState(context.layout, state);
    // Then the notice for the session that asked, which a reader checks against the state.
    const notice = awaitingNotice(state.id, state.project, record, session.dispatch.reply_to);
    await writeAwaitingNotice(context.layout, notice).catch((error: Error) =>
      context.log(`could not write ${state.id}'s waiting notice: ${error.message}`),
    );
    // And to the plugin's signed route, for a plugin on another host (kept until it gets through).
    await context.delivery
      ?.enqueueAwaiting?.(notice)
      .catch((error: Error) =>
        context.log(`could not record ${state.id}'s waiting notice for delivery: ${error.message}`),
      );
    await context.audit("awaiting", {
      dispatch_id: state.id,
      detail: { kind: record.kind, round: record.round, expires_at: record.expires_at },
    });
    context.log(
      `${state.id} waits for an answer to its ${record.kind} (round ${record.round}): ${record.how_to_answer}`,
    );
    this.queue.releaseSlot(state.id);
    this.armExpiry(session);
    this.pump();
  }

  /**
   * The gate a run stopped at: its last GSTACK_RESULT line says `gate_pending`, and its run
   * directory, checked against gstack's schemas, holds pending decisions. Anything less (no line,
   * another status, a run directory that does not check) is no gate: the run is finished and its
   * report says what was found.
   */
  private async gateOf(session: LiveSession, result: AgentRunResult): Promise<AwaitingRecord["gate"]> {
    const { state } = session;
    const cwd = workDir(state);
    const summary = await gstackRunOf(result.gstackResultLine, {
      cwd,
      consumer: state.id,
      now: this.context.now(),
    });
    if (summary?.status !== "gate_pending" || summary.check !== "valid") return undefined;
    const pending = summary.decisions_pending ?? [];
    if (pending.length === 0) return undefined;
    const manifest = JSON.parse(await readFile(resolve(cwd, summary.run_dir, "run.json"), "utf8")) as {
      gate_rev?: unknown;
    };
    const gateRev = typeof manifest.gate_rev === "number" && manifest.gate_rev >= 1 ? manifest.gate_rev : 1;
    const items: GateItem[] = pending.map((decision) => ({
      id: decision.id,
      label: gateLabel(decision.id, summary.run),
      title: decision.title,
      options: decision.options,
      recommended: decision.recommended,
    }));
    return {
      run_dir: summary.run_dir,
      ...(summary.run ? { run: summary.run } : {}),
      gate_rev: gateRev,
      items,
      ...(result.gstackResultLine ? { result_line: result.gstackResultLine } : {}),
      ...(result.result !== undefined ? { report: result.result } : {}),
    };
  }

  /** Ends a wait at its expiry, unless an answer came first. */
  private armExpiry(session: LiveSession): void {
    const record = session.state.awaiting;
    if (!record || record.answer) return;
    if (session.expiryTimer) clearTimeout(session.expiryTimer);
    const delay = Math.max(0, Date.parse(record.expires_at) - this.context.now().getTime());
    session.expiryTimer = setTimeout(
      () => {
        session.expiryTimer = undefined;
        if (Date.parse(record.expires_at) > this.context.now().getTime()) {
          this.armExpiry(session);
          return;
        }
        void this.expireWait(session).catch((error: Error) =>
          this.context.log(`could not end ${session.state.id}'s wait: ${error.message}`),
        );
      },
      Math.min(delay, 2_147_483_647),
    );
    session.expiryTimer.unref();
  }

  private async expireWait(session: LiveSession): Promise<void> {
    const gateResult = gateResultOf(session.state);
    const { state } = session;
    const record = state.awaiting;
    if (this.context.stopping || state.status !== "awaiting" || !record || record.answer) return;
    const message = `no answer to its ${record.kind} (round ${record.round}) came between ${record.since} and ${record.expires_at}; nothing was changed. Dispatch it again to start over.`;
    await this.context.audit("expired", { dispatch_id: state.id, reason: message });
    this.context.log(`${state.id}: ${message}`);
    await this.finish(session, "cancelled", {
      ...gateResult,
      failure: { kind: "cancelled", retryable: false, message, retryWithoutLearnings: false },
    });
  }

  /**
   * Holds a waiting session recovery found on disk: no slot, its expiry armed again. An answer
   * accepted before the daemon stopped, and not yet acted on, is acted on now (once: acting on
   * it writes the state that no longer waits).
   */
  adoptWaiting(state: SessionState, dispatch: Dispatch): LiveSession {
    const session: LiveSession = { state, dispatch };
    this.sessions.set(state.id, session);
    if (state.awaiting?.answer) {
      setImmediate(() => {
        void this.applyAnswer(session).catch((error: Error) =>
          this.context.log(`could not act on the answer to ${state.id}: ${error.message}`),
        );
      });
    } else {
      this.armExpiry(session);
      // Written again: a daemon stopped between the waiting state and its notice wrote none.
      const record = state.awaiting;
      if (state.status === "awaiting" && record) {
        const notice = awaitingNotice(state.id, state.project, record, dispatch.reply_to);
        void writeAwaitingNotice(this.context.layout, notice)
          .then(() => this.context.delivery?.enqueueAwaiting?.(notice))
          .catch((error: Error) =>
            this.context.log(`could not write ${state.id}'s waiting notice: ${error.message}`),
          );
      }
    }
    return session;
  }

  /**
   * A person's answer to a waiting dispatch. Checked first (an unknown, finished or not-waiting
   * dispatch, an answer already given or one to an older round is refused, changing nothing);
   * then written into the session state, which is what makes it accepted, and acted on. A crash
   * between the two is finished by recovery; the write that acts on it ends the wait, so it
   * takes effect once.
   */
  async answer(id: string, input: AnswerInput): Promise<{ round: number; status: "queued" | "cancelled" }> {
    const { context } = this;
    let session = this.sessions.get(id);
    if (session?.finishing) {
      // Its end is decided: answered as a finished dispatch once its completion is written.
      await session.finishing.catch(() => undefined);
      session = this.sessions.get(id);
    }
    if (!session) {
      const ended = await readCompletionStatus(context.layout.dispatch.completedJson(id));
      if (ended) {
        throw new AnswerRefusal(
          "finished",
          `dispatch ${id} has already ended (${ended.status ?? "finished"}); nothing waits for an answer. Send a new dispatch to do more.`,
        );
      }
      throw new AnswerRefusal(
        "unknown",
        `no dispatch ${id} is known to this daemon; check the id with gstack-dispatch status`,
      );
    }
    const { state } = session;
    const record = state.awaiting;
    if (state.status !== "awaiting" || !record || session.finishing) {
      throw new AnswerRefusal(
        "not_waiting",
        `dispatch ${id} is ${session.finishing ? "finishing" : state.status}, not waiting for an answer; answer once gstack-dispatch status ${id} shows it waiting`,
      );
    }
    if (record.answer) {
      throw new AnswerRefusal(
        "already_answered",
        `dispatch ${id} was already answered (${record.answer.kind}, at ${record.answer.accepted_at}); that answer stands`,
      );
    }
    if (input.round !== undefined && input.round !== record.round) {
      throw new AnswerRefusal(
        "stale",
        `that answer is for ${record.kind} round ${input.round}, but dispatch ${id} now waits on round ${record.round}; read the current ${record.kind} and answer it: ${answerUsage(id)}`,
      );
    }
    let reply: string | undefined;
    if (record.kind === "plan" && input.kind === "reply") {
      throw new AnswerRefusal(
        "unparseable",
        `"${input.reply}" is not an answer to a plan; send ${answerUsage(id)}`,
      );
    }
    if (record.kind === "gate" && (input.kind === "approve" || input.kind === "revise")) {
      throw new AnswerRefusal(
        "unparseable",
        `dispatch ${id} waits at a gstack gate, which takes a reply, not ${input.kind}; send ${record.how_to_answer} (or reject "<why>")`,
      );
    }
    if (input.kind === "reply") reply = parseGateReply(id, input.reply, record.gate?.items ?? []).text;
    const acceptedAt = context.now().toISOString();
    record.answer =
      input.kind === "approve"
        ? { kind: "approve", accepted_at: acceptedAt }
        : input.kind === "revise"
          ? { kind: "revise", feedback: input.feedback, accepted_at: acceptedAt }
          : input.kind === "reply"
            ? { kind: "reply", reply: reply ?? input.reply, accepted_at: acceptedAt }
            : { kind: "reject", reason: input.reason, accepted_at: acceptedAt };
    state.updated_at = acceptedAt;
    try {
      await writeState(context.layout, state);
    } catch (error) {
      delete record.answer;
      throw error;
    }
    if (session.expiryTimer) clearTimeout(session.expiryTimer);
    session.expiryTimer = undefined;
    await context.audit("answered", {
      dispatch_id: id,
      detail: { answer: input.kind, round: record.round },
    });
    context.log(`${id}: ${input.kind} for ${record.kind} round ${record.round}`);
    const round = record.round;
    await this.applyAnswer(session);
    return { round, status: input.kind === "reject" ? "cancelled" : "queued" };
  }

  /** Acts on the accepted answer in a waiting session's state. */
  private async applyAnswer(session: LiveSession): Promise<void> {
    const { context } = this;
    const { state } = session;
    const answer = state.awaiting?.answer;
    if (state.status !== "awaiting" || !answer || session.finishing) return;
    if (answer.kind === "reject") {
      await this.finish(session, "cancelled", {
        ...gateResultOf(state),
        failure: {
          kind: "cancelled",
          retryable: false,
          message: `${state.awaiting?.kind === "gate" ? "gate" : "plan"} rejected: ${answer.reason}`,
          retryWithoutLearnings: false,
        },
      });
      return;
    }
    const sessionId = state.awaiting?.session_id;
    const gate = state.awaiting?.gate;
    state.continue_with = {
      ...(sessionId ? { session_id: sessionId } : {}),
      answer:
        answer.kind === "revise"
          ? { kind: "revise", feedback: answer.feedback }
          : answer.kind === "reply"
            ? {
                kind: "reply",
                reply: answer.reply,
                gate_rev: gate?.gate_rev ?? 1,
                run_dir: gate?.run_dir ?? ".",
              }
            : { kind: "approve" },
    };
    if (answer.kind === "reply") {
      // The run goes on as it was: a gate does not change what the agent may do.
    } else if (answer.kind === "revise") {
      state.phase = "plan";
      state.plan_round = (state.plan_round ?? 1) + 1;
    } else state.phase = "execute";
    // The run goes on as a round of the same attempt, not a retry; the round is a start of its
    // own, with its own stream and exit record (numbered by spawnNumber).
    state.rounds = (state.rounds ?? 0) + 1;
    state.status = "queued";
    delete state.awaiting;
    state.updated_at = context.now().toISOString();
    await writeState(context.layout, state);
    this.queue.push(state.id);
    await this.queue.save();
    this.pump();
  }

  /** At a stop: sessions waiting to retry give their slot back and go first in the line. */
  async holdRetries(): Promise<void> {
    for (const session of this.sessions.values()) {
      if (!session.retryTimer) continue;
      clearTimeout(session.retryTimer);
      session.retryTimer = undefined;
      this.queue.releaseSlot(session.state.id);
      session.state.status = "queued";
      await writeState(this.context.layout, session.state);
      this.queue.putFirst(session.state.id);
    }
  }

  /**
   * When a stop's grace is over: running agents are cancelled and their sessions queued again
   * for the next start. Resolves once every slot is free (or after 10 s).
   */
  async interruptRunning(): Promise<void> {
    const running = [...this.sessions.values()].filter((session) => session.agent);
    for (const session of running) {
      session.cancelReason = "shutdown";
      session.agent?.cancel("daemon stopping");
    }
    await Promise.all(running.map((session) => session.agent?.done));
    await sleep(50);
    for (let waited = 0; waited < 10_000; waited += 50) {
      if (this.queue.active === 0) return;
      await sleep(50);
    }
  }
}

/**
 * The Claude Code session a later attempt continues: the one the earlier attempt's stream
 * reported, when the run has a worktree of its own (Claude Code resumes a session only from
 * the folder it began in) and the retry is not one that must leave the context behind.
 */
function resumeSessionId(state: SessionState): string | undefined {
  if (state.agent !== "claude" || !state.worktree || !state.include_learnings) return undefined;
  if (state.attempt === 1 && (state.restarts ?? 0) === 0) return undefined;
  return state.progress?.sessionId;
}

/** "attempt n", with the round once a person's answers started runs of it, for log lines. */
function describeStart(state: SessionState): string {
  return `attempt ${state.attempt}${state.rounds ? ` (round ${state.rounds + 1})` : ""}`;
}

function spawnFailure(error: Error): AgentFailure {
  return { kind: "spawn_error", retryable: false, message: error.message, retryWithoutLearnings: false };
}

function unknownFailure(result: AgentRunResult): AgentFailure {
  return {
    kind: "unknown",
    retryable: false,
    message: `the agent exited with ${result.signal ? `signal ${result.signal}` : `code ${result.exitCode}`}`,
    retryWithoutLearnings: false,
  };
}

/** The gate's items, numbered, as a person reads them. */
function gateSummary(gate: NonNullable<AwaitingRecord["gate"]>): string {
  return [
    `gstack's run ${gate.run ?? gate.run_dir} stopped at its gate (revision ${gate.gate_rev}):`,
    "",
    ...gate.items.map(
      (item, index) =>
        `${index + 1}. ${item.label}: ${item.title}. Options: ${item.options
          .map((option, at) => `${String.fromCharCode(97 + at)}) ${option}`)
          .join(
            "; ",
          )}. ${item.recommended === null ? "No recommendation." : `Recommended: ${item.recommended}.`}`,
    ),
  ].join("\n");
}

/** The gated run's own result, for a gate that ends unanswered or rejected: its report as it stood. */
function gateResultOf(state: SessionState): { result?: AgentRunResult } {
  const gate = state.awaiting?.gate;
  if (!gate) return {};
  return {
    result: {
      exitCode: 0,
      signal: null,
      cancelled: false,
      timedOut: false,
      progress: state.progress ?? { turns: 0, toolUses: 0 },
      ...(gate.report !== undefined ? { result: gate.report } : {}),
      ...(gate.result_line ? { gstackResultLine: gate.result_line } : {}),
    },
  };
}
