import type { AgentFailure, AgentRunResult, RunningAgent } from "@gstack/daemon-client";
import { carryAttemptSpend, spawnNumber, writeState } from "@gstack/daemon-client";
import type { Waits } from "../await/waits";
import type { DaemonContext } from "../daemon-context";
import type { Finisher } from "../finish/finisher";
import type { LiveSession, SessionHost } from "../live-session";
import { writeExitRecord } from "./exit-record";
import { noteRunTime } from "./run-time";

/** What settling a run needs besides the runner's sessions and line. */
export interface SettleOptions {
  /** Wait before retrying after a rate limit (default 30 s) or another retryable failure (default 5 s). */
  retryDelayMs?: { rateLimit: number; other: number };
  /** Told each time a session leaves (queued again by a stop). */
  onSessionLeft(): void;
  /** Launches a session again, for its retry. */
  relaunch(session: LiveSession): void;
}

/**
 * Settling a run once its agent has ended: the exit recorded first, then what comes next decided
 * by the result: queued again for the next start (the daemon stopped it), a wait for a person (a
 * plan, or a gstack gate), one retry, or the end handed to finishing.
 */
export class RunSettler {
  constructor(
    private readonly context: DaemonContext,
    private readonly host: SessionHost,
    private readonly waits: Waits,
    private readonly finisher: Finisher,
    private readonly options: SettleOptions,
  ) {}

  /** Takes an agent's result when it ends and settles the run. */
  async settleRun(session: LiveSession, agent: RunningAgent): Promise<void> {
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
    noteRunTime(this.context, session);
    if (session.persistTimer) clearTimeout(session.persistTimer);
    session.persistTimer = undefined;
    state.progress = result.progress;
    // From here the run's outcome is decided by its result, not by a cancel arriving now.
    await this.settle(session, result);
  }

  /** Decides what follows a run from its result. */
  async settle(session: LiveSession, result: AgentRunResult): Promise<void> {
    const { context } = this;
    const { state } = session;
    if (result.cancelled && session.cancelReason === "shutdown") {
      // Interrupted by the daemon stopping: keep it for the next start.
      carryAttemptSpend(state);
      state.status = "queued";
      delete state.pid;
      delete state.pgid;
      await writeState(context.layout, state);
      this.host.queue.releaseSlot(state.id);
      this.host.queue.putFirst(state.id);
      await this.host.queue.save();
      await context.audit("cancelled", {
        dispatch_id: state.id,
        reason: "daemon stopping; queued again for the next start",
      });
      this.host.drop(state.id);
      this.options.onSessionLeft();
      return;
    }
    if (result.cancelled) {
      await this.finisher.finish(session, "cancelled", { result });
      return;
    }
    if (result.timedOut) {
      await this.finisher.finish(session, "timeout", { result });
      return;
    }
    const failure = result.failure ?? (result.exitCode === 0 ? undefined : unknownFailure(result));
    if (!failure && state.phase === "plan") {
      await this.waits.start(session, result);
      return;
    }
    if (!failure) {
      const gate = await this.waits.gateOf(session, result).catch((error: Error) => {
        context.log(`could not read the gstack gate of ${state.id}: ${error.message}`);
        return undefined;
      });
      if (gate) {
        await this.waits.start(session, result, gate);
        return;
      }
    }
    if (!failure) {
      await this.finisher.finish(session, "completed", { result });
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
        this.options.relaunch(session);
      }, wait);
      session.cancelReason = context.stopping ? "shutdown" : session.cancelReason;
      return;
    }
    await this.finisher.finish(session, "failed", { result, failure });
  }
}

function unknownFailure(result: AgentRunResult): AgentFailure {
  return {
    kind: "unknown",
    retryable: false,
    message: `the agent exited with ${result.signal ? `signal ${result.signal}` : `code ${result.exitCode}`}`,
    retryWithoutLearnings: false,
  };
}
