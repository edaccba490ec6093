import type { CompletionStatus, Dispatch } from "@gstack/contracts";
import type { AgentStarter } from "@gstack/daemon-client";
import { budgetOf, type SessionState, writeQueueFile, writeState } from "@gstack/daemon-client";
import type { AnswerInput } from "../await/answer";
import { removeAwaitingNotice } from "../await/awaiting";
import { mustPlanFirst } from "../await/plan-mode";
import { Waits } from "../await/waits";
import type { DaemonContext } from "../daemon-context";
import { isDiskFull } from "../disk-space";
import type { CompletionStepContext } from "../finish/completion";
import { readCompletionStatus } from "../finish/completion";
import { Finisher, type FinishOutcome } from "../finish/finisher";
import type { CancelOutcome, LiveSession, SessionHost } from "../live-session";
import { DispatchQueue } from "../run/dispatch-queue";
import type { ExitRecord } from "../run/exit-record";
import { Launcher, spawnFailure } from "../run/launch";
import { unlessDiskFull } from "../run/run-time";
import { RunSettler } from "../run/settle-run";

export type { CancelOutcome, LiveSession } from "../live-session";

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
 * Runs the sessions: holds the live sessions and the line, admits a taken dispatch to the queue
 * and hands each session to the stage that has it next: launching (`launch.ts`) and settling its
 * run (`settle-run.ts`) here in `run/`, waiting for a person and taking answers (`await/waits.ts`),
 * finishing (`finish/finisher.ts`). Cancels, and what a stop does to retries and running agents,
 * are carried out here.
 */
export class SessionRunner {
  readonly queue: DispatchQueue;
  private readonly sessions = new Map<string, LiveSession>();
  private readonly finisher: Finisher;
  private readonly waits: Waits;
  private readonly launcher: Launcher;

  constructor(
    private readonly context: DaemonContext,
    private readonly options: SessionRunnerOptions,
  ) {
    this.queue = new DispatchQueue({
      maxConcurrent: () => context.settings.max_concurrent,
      save: (ids) => writeQueueFile(context.layout, ids),
      onSaveError: (error) => context.log(`could not save the queue: ${error.message}`),
    });
    const host: SessionHost = {
      queue: this.queue,
      get: (id) => this.sessions.get(id),
      hold: (session) => void this.sessions.set(session.state.id, session),
      drop: (id) => void this.sessions.delete(id),
      pump: () => this.pump(),
    };
    this.finisher = new Finisher(context, host, {
      completion: () => options.completion(),
      onSessionLeft: () => options.onSessionLeft?.(),
      waitEnded: (id) => removeAwaitingNotice(context.layout, id),
    });
    this.waits = new Waits(context, host, this.finisher);
    const settler = new RunSettler(context, host, this.waits, this.finisher, {
      ...(options.retryDelayMs ? { retryDelayMs: options.retryDelayMs } : {}),
      onSessionLeft: () => options.onSessionLeft?.(),
      relaunch: (session) =>
        void this.launcher.launch(session).catch((error: Error) => this.launchFailed(session, error, false)),
    });
    this.launcher = new Launcher(
      context,
      { startAgent: options.startAgent, ...(options.agentEnv ? { agentEnv: options.agentEnv } : {}) },
      this.finisher,
      settler,
    );
  }

  /**
   * A rough wait, in seconds, before a dispatch joining the queue now would start: the queue
   * ahead of it over the slots, times the median run of the last few dispatches (60 s before
   * any has ended). Used for `retry_after_seconds`.
   */
  estimatedWaitSeconds(): number {
    const sorted = [...this.finisher.recentRunSeconds].sort((a, b) => a - b);
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
        unlessDiskFull(context, error, `queueing ${dispatch.id}`),
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
      void this.launcher.launch(session).catch((error: Error) => this.launchFailed(session, error, true));
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

  /**
   * Holds a waiting session recovery found on disk: no slot, its expiry armed again. An answer
   * accepted before the daemon stopped, and not yet acted on, is acted on now.
   */
  adoptWaiting(state: SessionState, dispatch: Dispatch): LiveSession {
    return this.waits.adopt(state, dispatch);
  }

  /** A person's answer to a waiting dispatch (see `await/waits.ts`). */
  answer(id: string, input: AnswerInput): Promise<{ round: number; status: "queued" | "cancelled" }> {
    return this.waits.answer(id, input);
  }

  /** Ends a session through the completion step (once, however often asked), then frees its slot. */
  finish(session: LiveSession, status: CompletionStatus, outcome: FinishOutcome): Promise<void> {
    return this.finisher.finish(session, status, outcome);
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
