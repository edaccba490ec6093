import { readdir, readFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import {
  AWAITING_CALLBACK_TYPE,
  type AwaitingCallback,
  type AwaitingNotice,
  type DispatchSettings,
  type GstackLayout,
  parseJson,
  parseValue,
  readSecretFile,
  signCallback,
  writeFileAtomic,
} from "@gstack/contracts";
import type { DeliveryContext } from "@gstack/daemon-client";
import { readState } from "@gstack/daemon-client";
import { credentialTransportProblem } from "./delivery-targets";
import { postAttempt } from "./post-attempt";
import {
  type AttemptOutcome,
  DEFAULT_RETRY_SCHEDULE,
  nextDelayMs,
  type RetrySchedule,
} from "./retry-schedule";

/**
 * `sessions/{id}/awaiting-delivery.json`: the waiting notice of the latest round and how far its
 * POST to the plugin's route has got, so a restarted daemon sends it again while the dispatch
 * still waits. A new round replaces it.
 */
export interface AwaitingOutbox {
  version: 1;
  dispatch_id: string;
  round: number;
  url: string;
  created_at: string;
  notice: AwaitingNotice;
  /** `ended`: the wait was over (answered, revised, expired, cancelled) before it got through. */
  state: "pending" | "delivered" | "failed" | "ended";
  attempts: number;
  next_attempt_at?: string;
  last_error?: string;
  delivered_at?: string;
  /** Why it stopped without success (`failed` or `ended`). */
  reason?: string;
}

/** What `createAwaitingDelivery` needs; everything after `context` is for tests. */
export interface AwaitingDeliveryOptions {
  layout: GstackLayout;
  settings: DispatchSettings;
  context: DeliveryContext;
  schedule?: Partial<RetrySchedule>;
  now?: () => Date;
  fetch?: typeof fetch;
  random?: () => number;
  postTimeoutMs?: number;
}

/**
 * Waiting notices to a daemon's `openclaw_callback_url`, for a plugin on another host that
 * cannot read `dispatch/awaiting/`. Contract:
 * - `enqueue` is durable: when it resolves the round's outbox is on disk in the session folder;
 *   it is posted until a 2xx, a permanent refusal, or the end of the wait (checked against the
 *   session state before every attempt), on the completion retry schedule.
 * - `replay` takes up every notice in `dispatch/awaiting/` (start-up, each heartbeat): a round
 *   already delivered is not sent again; the plugin's own ledger makes a repeat harmless anyway.
 * - Nothing throws for a receiver that is down or refuses; that is audited and logged.
 */
export interface AwaitingDelivery {
  enqueue(notice: AwaitingNotice): Promise<void>;
  replay(): Promise<void>;
  stop(graceMs: number): Promise<void>;
}

/** The outbox file of one dispatch's waiting notice. */
export function awaitingOutboxPath(layout: GstackLayout, id: string): string {
  return join(layout.dispatch.sessionDir(id), "awaiting-delivery.json");
}

/** The idempotency key of one round, the same words as the plugin's report key. */
export function awaitingIdempotencyKey(notice: Pick<AwaitingNotice, "dispatch_id" | "round">): string {
  return `${notice.dispatch_id}:awaiting:${notice.round}`;
}

/** The signed body of one attempt, checked against the shared schema before it leaves. */
export function awaitingCallbackBody(notice: AwaitingNotice, sentAt: Date): AwaitingCallback {
  return parseValue("awaiting-callback", {
    type: AWAITING_CALLBACK_TYPE,
    dispatch_id: notice.dispatch_id,
    sent_at: sentAt.toISOString(),
    notice,
    delivered_by: hostname() || "localhost",
  });
}

export async function readAwaitingOutbox(
  layout: GstackLayout,
  id: string,
): Promise<AwaitingOutbox | undefined> {
  const path = awaitingOutboxPath(layout, id);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new Error(`${path}: ${(error as Error).message}`);
  }
  const value = JSON.parse(text) as AwaitingOutbox;
  if (value.version !== 1 || typeof value.round !== "number" || value.dispatch_id !== id) {
    throw new Error(`${path}: not a waiting-notice outbox (version 1 with dispatch_id ${id} and round)`);
  }
  return value;
}

async function writeAwaitingOutbox(layout: GstackLayout, outbox: AwaitingOutbox): Promise<void> {
  await writeFileAtomic(
    awaitingOutboxPath(layout, outbox.dispatch_id),
    `${JSON.stringify(outbox, null, 2)}\n`,
    { mode: 0o600 },
  );
}

/** Why the dispatch no longer waits on this round, or undefined while it does. */
async function waitOver(layout: GstackLayout, notice: AwaitingNotice): Promise<string | undefined> {
  const state = await readState(layout, notice.dispatch_id);
  if (!state) return "its session state is gone";
  const record = state.awaiting;
  if (state.status !== "awaiting" || !record) return `it is ${state.status}, no longer waiting`;
  if (record.round !== notice.round || record.kind !== notice.kind) {
    return `it now waits on ${record.kind} round ${record.round}`;
  }
  if (record.answer) return `it was answered (${record.answer.kind})`;
  return undefined;
}

export function createAwaitingDelivery(options: AwaitingDeliveryOptions): AwaitingDelivery {
  const { layout, settings, context } = options;
  const url = settings.openclaw_callback_url;
  const schedule: RetrySchedule = { ...DEFAULT_RETRY_SCHEDULE, ...options.schedule };
  const now = options.now ?? (() => new Date());
  const fetchImplementation = options.fetch ?? fetch;
  const random = options.random ?? Math.random;
  const timers = new Map<string, NodeJS.Timeout>();
  const running = new Map<string, Promise<void>>();
  let stopping = false;

  async function audit(
    event: "callback_sent" | "callback_failed" | "callback_refused",
    outbox: AwaitingOutbox,
    extra: { reason?: string; detail?: Record<string, unknown> } = {},
  ): Promise<void> {
    await context
      .audit(event, {
        dispatch_id: outbox.dispatch_id,
        ...(extra.reason ? { reason: extra.reason } : {}),
        detail: {
          url: outbox.url,
          receiver: "gstack-receiver",
          notice: "awaiting",
          round: outbox.round,
          attempts: outbox.attempts,
          ...extra.detail,
        },
      })
      .catch((error: Error) => context.log(`audit: ${error.message}`));
  }

  async function attempt(outbox: AwaitingOutbox): Promise<AttemptOutcome> {
    const transport = credentialTransportProblem(outbox.url);
    if (transport) return { kind: "permanent", reason: transport };
    let secret: string;
    try {
      secret = await readSecretFile(layout.callbackSecret);
    } catch (error) {
      const reason =
        (error as NodeJS.ErrnoException).code === "ENOENT"
          ? `no callback secret in ${layout.callbackSecret} (create it with mode 0600)`
          : `callback secret: ${(error as Error).message.split("\n").join(" ")}`;
      return { kind: "permanent", reason };
    }
    const sentAt = now();
    const body = JSON.stringify(awaitingCallbackBody(outbox.notice, sentAt));
    return postAttempt(
      fetchImplementation,
      outbox.url,
      {
        headers: {
          "content-type": "application/json",
          "idempotency-key": awaitingIdempotencyKey(outbox.notice),
          ...signCallback(body, secret, sentAt),
        },
        body,
        timeoutMs: options.postTimeoutMs ?? 15_000,
      },
      now,
    );
  }

  function scheduleIn(id: string, waitMs: number): void {
    if (stopping) return;
    const existing = timers.get(id);
    if (existing) clearTimeout(existing);
    const timer = setTimeout(
      () => {
        timers.delete(id);
        void run(id);
      },
      Math.max(0, Math.min(waitMs, schedule.maxDelayMs)),
    );
    timer.unref();
    timers.set(id, timer);
  }

  function run(id: string): Promise<void> {
    const current = running.get(id);
    if (current) return current;
    const promise = deliverDue(id)
      .catch((error: Error) => context.log(`waiting notice of ${id}: ${error.message}`))
      .finally(() => running.delete(id));
    running.set(id, promise);
    return promise;
  }

  async function deliverDue(id: string): Promise<void> {
    if (stopping) return;
    const outbox = await readAwaitingOutbox(layout, id);
    if (outbox?.state !== "pending") return;
    const over = await waitOver(layout, outbox.notice);
    if (over) {
      outbox.state = "ended";
      outbox.reason = `the wait ended before the notice got through: ${over}`;
      delete outbox.next_attempt_at;
      await writeAwaitingOutbox(layout, outbox);
      context.log(`waiting notice of ${id} (round ${outbox.round}) not sent: ${over}`);
      return;
    }
    const due = outbox.next_attempt_at ? Date.parse(outbox.next_attempt_at) - now().getTime() : 0;
    // A wait beyond the longest one means the clock went back since: due now.
    if (due > 0 && due <= schedule.maxDelayMs) {
      scheduleIn(id, due);
      return;
    }
    const outcome = await attempt(outbox);
    outbox.attempts += 1;
    if (outcome.kind === "delivered") {
      outbox.state = "delivered";
      outbox.delivered_at = now().toISOString();
      delete outbox.next_attempt_at;
      delete outbox.last_error;
      await writeAwaitingOutbox(layout, outbox);
      await audit("callback_sent", outbox);
      context.log(`waiting notice of ${id} (round ${outbox.round}) delivered to ${outbox.url}`);
      return;
    }
    outbox.last_error = outcome.reason;
    const age = now().getTime() - Date.parse(outbox.created_at);
    if (outcome.kind === "permanent" || age >= schedule.giveUpAfterMs) {
      outbox.state = "failed";
      outbox.reason =
        outcome.kind === "permanent"
          ? outcome.reason
          : `gave up after ${outbox.attempts} attempts; last: ${outcome.reason}`;
      delete outbox.next_attempt_at;
      await writeAwaitingOutbox(layout, outbox);
      await audit("callback_refused", outbox, { reason: outbox.reason });
      context.log(
        `waiting notice of ${id} (round ${outbox.round}) to ${outbox.url} ended without success: ${outbox.reason}`,
      );
      return;
    }
    const delay = nextDelayMs(schedule, outbox.attempts, outcome.retryAfterMs, random);
    outbox.next_attempt_at = new Date(now().getTime() + delay).toISOString();
    await writeAwaitingOutbox(layout, outbox);
    await audit("callback_failed", outbox, {
      reason: outcome.reason,
      detail: { next_attempt_at: outbox.next_attempt_at },
    });
    scheduleIn(id, delay);
  }

  async function enqueue(notice: AwaitingNotice): Promise<void> {
    if (!url || stopping) return;
    const id = notice.dispatch_id;
    const existing = await readAwaitingOutbox(layout, id).catch((error: Error) => {
      context.log(`${error.message}; writing it again`);
      return undefined;
    });
    if (existing && existing.round > notice.round) return;
    if (!existing || existing.round < notice.round) {
      const created = now().toISOString();
      await writeAwaitingOutbox(layout, {
        version: 1,
        dispatch_id: id,
        round: notice.round,
        url,
        created_at: created,
        notice,
        state: "pending",
        attempts: 0,
        next_attempt_at: created,
      });
    }
    if (!timers.has(id)) void run(id);
  }

  return {
    enqueue,

    async replay() {
      if (!url || stopping) return;
      let names: string[] = [];
      try {
        names = await readdir(layout.dispatch.awaiting);
      } catch {}
      for (const name of names) {
        if (!name.endsWith(".json")) continue;
        const path = join(layout.dispatch.awaiting, name);
        try {
          const notice = parseJson("awaiting-notice", await readFile(path, "utf8"), { source: path });
          if (`${notice.dispatch_id}.json` !== name) continue;
          if (running.has(notice.dispatch_id) || timers.has(notice.dispatch_id)) continue;
          await enqueue(notice);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
          context.log(`waiting notice replay: ${(error as Error).message.split("\n")[0]}`);
        }
      }
    },

    async stop(graceMs: number) {
      stopping = true;
      for (const timer of timers.values()) clearTimeout(timer);
      timers.clear();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...running.values()]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      if (timer) clearTimeout(timer);
    },
  };
}
