import type { CompletionStatus } from "@gstack/contracts";
import type { AgentFailure, AgentRunResult } from "@gstack/daemon-client";
import type { DaemonContext } from "../daemon-context";
import { isDiskFull } from "../disk-space";
import type { LiveSession, SessionHost } from "../live-session";
import { type CompletionStepContext, carryOutCompletion, planCompletion, readPlan } from "./completion";

/** How a session ended, as the completion step is given it. */
export interface FinishOutcome {
  result?: AgentRunResult;
  failure?: AgentFailure;
  countCommits?: false;
}

/** What finishing needs besides the runner's sessions and line. */
export interface FinisherOptions {
  /** What the completion step needs (the delivery exists only once the daemon started, so it is asked each time). */
  completion(): CompletionStepContext;
  /** Told each time a session leaves while the daemon stops. */
  onSessionLeft(): void;
  /** A dispatch that waited for a person no longer does: its waiting notice goes. */
  waitEnded(id: string): Promise<void>;
}

/**
 * Finishing a session: its completion decided and carried out step by step (waiting for room when
 * the disk is full), then its slot freed and the session let go.
 */
export class Finisher {
  /** How long the last few dispatches that ran took, in seconds (for queue estimates). */
  readonly recentRunSeconds: number[] = [];

  constructor(
    private readonly context: DaemonContext,
    private readonly host: SessionHost,
    private readonly options: FinisherOptions,
  ) {}

  /** Ends a session through the completion step (once, however often asked), then frees its slot. */
  finish(session: LiveSession, status: CompletionStatus, outcome: FinishOutcome): Promise<void> {
    session.finishing ??= this.finishNow(session, status, outcome);
    return session.finishing;
  }

  private async finishNow(
    session: LiveSession,
    status: CompletionStatus,
    outcome: FinishOutcome,
  ): Promise<void> {
    const { context, host } = this;
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
        host.queue.releaseSlot(state.id);
        if (!(await context.disk.waitForRoom())) throw error;
        resumed = (await readPlan(context.layout, state.id)) !== undefined;
      }
    }
    // A dispatch that waited no longer does: its waiting notice goes (readers skip a stale one anyway).
    await this.options.waitEnded(state.id);
    if (state.started_at) {
      this.recentRunSeconds.push(plan.completion.duration);
      if (this.recentRunSeconds.length > 20) this.recentRunSeconds.shift();
    }
    host.queue.releaseSlot(state.id);
    host.drop(state.id);
    host.pump();
    if (context.stopping) this.options.onSessionLeft();
  }
}
