import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import type { Dispatch } from "@gstack/contracts";
import type { AgentRunResult } from "@gstack/daemon-client";
import { carryAttemptSpend, type SessionState, workDir, writeState } from "@gstack/daemon-client";
import type { DaemonContext } from "../daemon-context";
import { readCompletionStatus } from "../finish/completion";
import type { Finisher } from "../finish/finisher";
import { gstackRunOf } from "../gstack-run/gstack-run-of";
import type { LiveSession, SessionHost } from "../live-session";
import { type AnswerInput, AnswerRefusal, answerUsage } from "./answer";
import {
  type AwaitingRecord,
  awaitingNotice,
  expiryOf,
  howToAnswerPlan,
  writeAwaitingNotice,
  writeAwaitingReport,
} from "./awaiting";
import { type GateItem, gateLabel, gateUsage, parseGateReply } from "./gate-reply";

/**
 * Dispatches that wait for a person: a run that made a plan or stopped at a gstack gate waits,
 * holding no slot, until an answer comes or the wait expires. An answer is checked, written into
 * the session state and acted on: the run goes on as a round of its attempt, or ends.
 */
export class Waits {
  constructor(
    private readonly context: DaemonContext,
    private readonly host: SessionHost,
    private readonly finisher: Finisher,
  ) {}

  /**
   * A plan is made: the dispatch waits for a person, holding no slot. The wait, with the agent
   * session an answer continues, is on disk before the slot is given back; the plan is the
   * waiting report (`sessions/{id}/awaiting.md`, and the snapshot's `awaiting`).
   */
  async start(session: LiveSession, result: AgentRunResult, gate?: AwaitingRecord["gate"]): Promise<void> {
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
    this.host.queue.releaseSlot(state.id);
    this.armExpiry(session);
    this.host.pump();
  }

  /**
   * The gate a run stopped at: its last GSTACK_RESULT line says `gate_pending`, and its run
   * directory, checked against gstack's schemas, holds pending decisions. Anything less (no line,
   * another status, a run directory that does not check) is no gate: the run is finished and its
   * report says what was found.
   */
  async gateOf(session: LiveSession, result: AgentRunResult): Promise<AwaitingRecord["gate"]> {
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
    await this.finisher.finish(session, "cancelled", {
      ...gateResult,
      failure: { kind: "cancelled", retryable: false, message, retryWithoutLearnings: false },
    });
  }

  /**
   * Holds a waiting session recovery found on disk: no slot, its expiry armed again. An answer
   * accepted before the daemon stopped, and not yet acted on, is acted on now (once: acting on
   * it writes the state that no longer waits).
   */
  adopt(state: SessionState, dispatch: Dispatch): LiveSession {
    const session: LiveSession = { state, dispatch };
    this.host.hold(session);
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
    let session = this.host.get(id);
    if (session?.finishing) {
      // Its end is decided: answered as a finished dispatch once its completion is written.
      await session.finishing.catch(() => undefined);
      session = this.host.get(id);
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
      await this.finisher.finish(session, "cancelled", {
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
    this.host.queue.push(state.id);
    await this.host.queue.save();
    this.host.pump();
  }
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
