import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type DispatchSettings, type GstackLayout, writeFileAtomic } from "@gstack/contracts";
import type {
  CompletionDelivery,
  DeliveryContext,
  DeliveryStatus,
  EndpointCheck,
  PendingDelivery,
} from "@gstack/daemon-client";
import { auditHolds } from "../daemon-context";
import { readCallbackToken } from "../token";
import { createAwaitingDelivery } from "./awaiting-delivery";
import {
  convertLegacyOutbox,
  type DeliveryOutbox,
  isDelivered,
  markDelivered,
  type OutboxTarget,
  readOutbox,
  writeOutbox,
} from "./delivery-outbox";
import { checkCallbackUrl, configuredEndpoints, type ReceiverKind } from "./delivery-targets";
import { checkEndpoint } from "./endpoint-check";
import { attemptTarget, outboxTargets, type SendOptions } from "./outbox-send";
import { DEFAULT_RETRY_SCHEDULE, nextDelayMs, type RetrySchedule } from "./retry-schedule";

/** What `createCompletionDelivery` needs; everything after `context` is for tests. */
export interface CompletionDeliveryOptions {
  layout: GstackLayout;
  settings: DispatchSettings;
  context: DeliveryContext;
  /** Back-off between transient failures (default: 5 s doubling to 10 min, abandoned after 3 days). */
  schedule?: Partial<RetrySchedule>;
  now?: () => Date;
  /** A clock that only moves forward, for waits while the daemon runs (default `performance.now`). */
  monotonicMs?: () => number;
  fetch?: typeof fetch;
  random?: () => number;
  /** Time limit of one POST (default 15 s) and of the start-up probe (default 5 s). */
  postTimeoutMs?: number;
  probeTimeoutMs?: number;
  /** The Clawvisor bearer token (default: the keychain, then `.clawvisor-token`). */
  readClawvisorToken?: () => Promise<string | undefined>;
}

/** At most this many ended deliveries are listed in `status()` and the status file. */
const FAILED_KEPT = 20;

/**
 * The daemon's completion delivery: one outbox file per session, one target per configured
 * receiver (Clawvisor with its bearer token, OpenClaw's hooks endpoint with the hooks token,
 * the OpenClaw plugin's gstack receiver with a signed body), retried with exponential
 * back-off on transient failures and ended on permanent ones. See `CompletionDelivery`.
 * Endpoint states and ended deliveries are also written to `dispatch/.delivery-status.json`
 * for `gstack-dispatch status`.
 */
export function createCompletionDelivery(options: CompletionDeliveryOptions): CompletionDelivery {
  const { layout, settings, context } = options;
  const schedule: RetrySchedule = { ...DEFAULT_RETRY_SCHEDULE, ...options.schedule };
  const now = options.now ?? (() => new Date());
  const monotonicMs = options.monotonicMs ?? (() => performance.now());
  // When each waiting target is due, on the monotonic clock, for targets this process scheduled:
  // moving the wall clock neither delays nor hastens them. `next_attempt_at` is for restarts.
  const dueAt = new Map<string, number>();
  const dueKey = (sessionDir: string, target: OutboxTarget) => `${sessionDir}\0${target.kind}\0${target.url}`;
  // A delivery is abandoned only after this many attempts as well as `giveUpAfterMs` by the
  // wall clock, so a clock moved forward does not end it by itself.
  const minAttemptsToGiveUp = Math.max(1, Math.floor(schedule.giveUpAfterMs / schedule.maxDelayMs / 2));
  /** Milliseconds until a target is due (0: due now). */
  function remainingMs(sessionDir: string, target: OutboxTarget): number {
    const due = dueAt.get(dueKey(sessionDir, target));
    if (due !== undefined) return Math.max(0, due - monotonicMs());
    if (!target.next_attempt_at) return 0;
    const wait = Date.parse(target.next_attempt_at) - now().getTime();
    if (Number.isNaN(wait)) return 0;
    // No wait is ever longer than the cap: a longer one means the clock went back since.
    if (wait > schedule.maxDelayMs) {
      context.log(
        `delivery of ${sessionDir}: next attempt was set for ${target.next_attempt_at}, beyond any wait; the clock moved back, so it is due now`,
      );
      return 0;
    }
    return Math.max(0, wait);
  }
  const fetchImplementation = options.fetch ?? fetch;
  const random = options.random ?? Math.random;
  const sending: SendOptions = {
    layout,
    settings,
    now,
    fetch: fetchImplementation,
    readClawvisorToken: options.readClawvisorToken ?? (() => readCallbackToken(layout)),
    ...(options.postTimeoutMs !== undefined ? { postTimeoutMs: options.postTimeoutMs } : {}),
  };
  const endpoints = new Map<ReceiverKind, EndpointCheck>(
    configuredEndpoints(settings).map((endpoint) => [
      endpoint.kind,
      { ...endpoint, reachable: false, detail: "not checked yet" },
    ]),
  );
  // Targets whose `callback_sent` event is known to be in the audit log (this process wrote it,
  // or looked): the outbox says `delivered` before that event is written, so a target found
  // delivered by an earlier process is looked up once, and its event written if a kill cut it off.
  const sentAudited = new Set<string>();
  const timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
  const running = new Map<string, Promise<void>>();
  const pendingSessions = new Set<string>();
  let failed: DeliveryStatus["failed"] = [];
  let stopping = false;
  let statusChain: Promise<void> = Promise.resolve();
  let loadedFailed: Promise<void> | undefined;
  // Waiting notices go to the plugin's route too, on the same schedule and clock.
  const awaiting = createAwaitingDelivery({
    layout,
    settings,
    context,
    schedule,
    now,
    fetch: fetchImplementation,
    random,
    ...(options.postTimeoutMs !== undefined ? { postTimeoutMs: options.postTimeoutMs } : {}),
  });

  function loadFailed(): Promise<void> {
    loadedFailed ??= readFile(layout.dispatch.deliveryStatus, "utf8")
      .then((text) => {
        const previous = (JSON.parse(text) as Partial<DeliveryStatus>).failed;
        if (Array.isArray(previous)) failed = [...previous, ...failed].slice(0, FAILED_KEPT);
      })
      .catch(() => undefined);
    return loadedFailed;
  }

  function status(): DeliveryStatus {
    return { endpoints: [...endpoints.values()], pending: pendingSessions.size, failed: [...failed] };
  }

  function saveStatus(): Promise<void> {
    statusChain = statusChain
      .then(() =>
        writeFileAtomic(
          layout.dispatch.deliveryStatus,
          `${JSON.stringify({ updated_at: now().toISOString(), pid: process.pid, ...status() }, null, 2)}\n`,
          { mode: 0o600 },
        ),
      )
      .catch((error: Error) => context.log(`could not save the delivery status: ${error.message}`));
    return statusChain;
  }

  function noteEndpoint(kind: ReceiverKind, reachable: boolean, detail: string): void {
    const endpoint = endpoints.get(kind);
    if (endpoint) endpoints.set(kind, { ...endpoint, reachable, detail });
  }

  async function audit(
    event: "callback_sent" | "callback_failed" | "callback_refused" | "endpoint_checked",
    fields: Parameters<DeliveryContext["audit"]>[1],
  ): Promise<void> {
    await context.audit(event, fields).catch((error: Error) => context.log(`audit: ${error.message}`));
  }

  function scheduleIn(sessionDir: string, waitMs: number): void {
    if (stopping) return;
    const at = monotonicMs() + waitMs;
    const existing = timers.get(sessionDir);
    if (existing && existing.at <= at) return;
    if (existing) clearTimeout(existing.timer);
    const timer = setTimeout(
      () => {
        timers.delete(sessionDir);
        void run(sessionDir);
      },
      Math.max(0, waitMs),
    );
    timer.unref();
    timers.set(sessionDir, { at, timer });
  }

  function run(sessionDir: string): Promise<void> {
    const current = running.get(sessionDir);
    if (current) return current;
    const promise = deliverDue(sessionDir)
      .catch((error: Error) => context.log(`delivery for ${sessionDir}: ${error.message}`))
      .finally(() => running.delete(sessionDir));
    running.set(sessionDir, promise);
    return promise;
  }

  async function finish(sessionDir: string, outbox: DeliveryOutbox): Promise<void> {
    await markDelivered(sessionDir, outbox, now());
    pendingSessions.delete(sessionDir);
    await saveStatus();
  }

  async function recordEnded(outbox: DeliveryOutbox, target: OutboxTarget, reason: string): Promise<void> {
    target.state = "failed";
    target.failed_reason = reason;
    delete target.next_attempt_at;
    failed = [{ dispatch_id: outbox.dispatch_id, url: target.url, reason }, ...failed].slice(0, FAILED_KEPT);
    await audit("callback_refused", {
      dispatch_id: outbox.dispatch_id,
      reason,
      detail: { url: target.url, receiver: target.kind, attempts: target.attempts },
    });
    context.log(`delivery of ${outbox.dispatch_id} to ${target.url} ended without success: ${reason}`);
  }

  /** The `callback_sent` event of a target an earlier process delivered, when a kill cut it off. */
  async function auditSentOnce(
    sessionDir: string,
    outbox: DeliveryOutbox,
    target: OutboxTarget,
  ): Promise<void> {
    const key = dueKey(sessionDir, target);
    if (sentAudited.has(key)) return;
    const held = await auditHolds(
      layout,
      (event) =>
        event.event === "callback_sent" &&
        event.dispatch_id === outbox.dispatch_id &&
        (event.detail as { url?: unknown; receiver?: unknown } | undefined)?.url === target.url &&
        (event.detail as { receiver?: unknown } | undefined)?.receiver === target.kind,
      `"${outbox.dispatch_id}"`,
    );
    if (!held) {
      await audit("callback_sent", {
        dispatch_id: outbox.dispatch_id,
        detail: {
          url: target.url,
          receiver: target.kind,
          attempts: target.attempts,
          written: "after a restart",
        },
      });
    }
    sentAudited.add(key);
  }

  async function deliverDue(sessionDir: string): Promise<void> {
    if (stopping) return;
    const outbox = await readOutbox(sessionDir);
    if (!outbox || (await isDelivered(sessionDir))) {
      pendingSessions.delete(sessionDir);
      return;
    }
    pendingSessions.add(sessionDir);
    for (const target of outbox.targets) {
      if (stopping) break;
      if (target.state === "delivered") await auditSentOnce(sessionDir, outbox, target);
      if (target.state !== "pending") continue;
      if (remainingMs(sessionDir, target) > 0) continue;
      dueAt.delete(dueKey(sessionDir, target));
      const outcome = await attemptTarget(sending, target, outbox);
      target.attempts += 1;
      if (outcome.kind === "delivered") {
        target.state = "delivered";
        target.delivered_at = now().toISOString();
        delete target.next_attempt_at;
        delete target.last_error;
        noteEndpoint(target.kind, true, `took a delivery at ${target.delivered_at} (HTTP ${outcome.status})`);
        await writeOutbox(sessionDir, outbox);
        await audit("callback_sent", {
          dispatch_id: outbox.dispatch_id,
          detail: { url: target.url, receiver: target.kind, attempts: target.attempts },
        });
        sentAudited.add(dueKey(sessionDir, target));
        context.log(`completion of ${outbox.dispatch_id} delivered to ${target.url}`);
        continue;
      }
      target.last_error = outcome.reason;
      if (outcome.kind === "permanent") {
        await recordEnded(outbox, target, outcome.reason);
        await writeOutbox(sessionDir, outbox);
        continue;
      }
      noteEndpoint(target.kind, false, `last delivery attempt failed: ${outcome.reason}`);
      const age = now().getTime() - Date.parse(outbox.created_at);
      if (age >= schedule.giveUpAfterMs && target.attempts >= minAttemptsToGiveUp) {
        await recordEnded(
          outbox,
          target,
          `gave up after ${target.attempts} attempts over ${Math.round(age / 60_000)} minutes; last: ${outcome.reason}`,
        );
        await writeOutbox(sessionDir, outbox);
        continue;
      }
      const delay = nextDelayMs(schedule, target.attempts, outcome.retryAfterMs, random);
      target.next_attempt_at = new Date(now().getTime() + delay).toISOString();
      dueAt.set(dueKey(sessionDir, target), monotonicMs() + delay);
      await writeOutbox(sessionDir, outbox);
      await audit("callback_failed", {
        dispatch_id: outbox.dispatch_id,
        reason: outcome.reason,
        detail: {
          url: target.url,
          receiver: target.kind,
          attempts: target.attempts,
          next_attempt_at: target.next_attempt_at,
        },
      });
    }
    const waiting = outbox.targets.filter((target) => target.state === "pending");
    if (waiting.length === 0) {
      await finish(sessionDir, outbox);
      return;
    }
    await saveStatus();
    scheduleIn(sessionDir, Math.min(...waiting.map((target) => remainingMs(sessionDir, target))));
  }

  return {
    async start() {
      await loadFailed();
      const checks = await Promise.all(
        configuredEndpoints(settings).map((endpoint) =>
          checkEndpoint(endpoint, { fetch: fetchImplementation, timeoutMs: options.probeTimeoutMs ?? 5_000 }),
        ),
      );
      for (const check of checks) {
        endpoints.set(check.kind, check);
        context.log(`${check.kind} endpoint ${check.url}: ${check.detail}`);
        await audit("endpoint_checked", {
          ...(check.reachable ? {} : { reason: check.detail }),
          detail: { url: check.url, receiver: check.kind, reachable: check.reachable, found: check.detail },
        });
      }
      await saveStatus();
      return checks;
    },

    checkCallbackUrl(url) {
      return checkCallbackUrl(settings, url);
    },

    async enqueue(delivery: PendingDelivery) {
      const { sessionDir, dispatch, completion } = delivery;
      if (await isDelivered(sessionDir)) return;
      const existing = await readOutbox(sessionDir);
      if (!existing) {
        const targets = outboxTargets(settings, dispatch, now);
        if (targets.length === 0) {
          if (dispatch.callback_url) {
            context.log(
              `local-only mode: the report for ${dispatch.id} stays on disk (callback_url not used)`,
            );
          }
          return;
        }
        const outbox: DeliveryOutbox = {
          version: 1,
          dispatch_id: dispatch.id,
          created_at: now().toISOString(),
          completion,
          report_markdown: delivery.reportMarkdown,
          targets,
        };
        await loadFailed();
        for (const target of targets) {
          if (target.state === "failed" && target.failed_reason) {
            await recordEnded(outbox, target, target.failed_reason);
          }
        }
        await writeOutbox(sessionDir, outbox);
      }
      pendingSessions.add(sessionDir);
      void run(sessionDir);
    },

    enqueueAwaiting: (notice) => awaiting.enqueue(notice),

    async replay() {
      if (stopping) return;
      await awaiting.replay();
      await loadFailed();
      let names: string[] = [];
      try {
        names = await readdir(layout.dispatch.sessions);
      } catch {}
      for (const name of names) {
        const sessionDir = join(layout.dispatch.sessions, name);
        if (running.has(sessionDir) || timers.has(sessionDir)) continue;
        try {
          if (await isDelivered(sessionDir)) continue;
          const outbox = await readOutbox(sessionDir);
          if (!outbox && !(await convertLegacyOutbox(layout, sessionDir, now))) continue;
          pendingSessions.add(sessionDir);
          void run(sessionDir);
        } catch (error) {
          context.log(`delivery replay: ${(error as Error).message}`);
        }
      }
    },

    status,

    async settled() {
      // A round may end by starting another (a timer due now): wait until none is left.
      while (running.size > 0) await Promise.allSettled([...running.values()]);
    },

    async stop(graceMs: number) {
      stopping = true;
      const awaitingStopped = awaiting.stop(graceMs);
      for (const { timer } of timers.values()) clearTimeout(timer);
      timers.clear();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...running.values()]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      if (timer) clearTimeout(timer);
      await awaitingStopped;
      await statusChain;
    },
  };
}
