/** How one delivery attempt ended, as far as deciding what happens next. */
export type AttemptOutcome =
  | { kind: "delivered"; status: number }
  | { kind: "transient"; reason: string; retryAfterMs?: number }
  | { kind: "permanent"; reason: string };

/**
 * HTTP statuses worth asking again: a timeout, "too early", rate limiting and server errors.
 * Every other 4xx (400 bad body, 401/403 credentials, 404/405 wrong route, 413 too large, ...)
 * will answer the same the next time, so the delivery ends there.
 */
const TRANSIENT_STATUSES = new Set([408, 425, 429]);

/** Classifies an HTTP answer; `retryAfter` is the raw `Retry-After` header, if any. */
export function classifyResponse(status: number, retryAfter: string | null, now: number): AttemptOutcome {
  if (status >= 200 && status < 300) return { kind: "delivered", status };
  if (status >= 300 && status < 400) {
    return {
      kind: "permanent",
      reason: `HTTP ${status}: redirects are not followed (credentials stay with the configured origin)`,
    };
  }
  if (TRANSIENT_STATUSES.has(status) || status >= 500) {
    const retryAfterMs = parseRetryAfter(retryAfter, now);
    return {
      kind: "transient",
      reason: `HTTP ${status}`,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    };
  }
  return { kind: "permanent", reason: `HTTP ${status}` };
}

/** `Retry-After` as milliseconds from `now`: delta seconds or an HTTP date; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  if (/^[0-9]+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/** Exponential back-off between transient failures. */
export interface RetrySchedule {
  /** Wait after the first failure. */
  firstDelayMs: number;
  /** No wait is longer than this, whatever the attempt count or `Retry-After` say. */
  maxDelayMs: number;
  /** A delivery still failing this long after it was enqueued ends as failed. */
  giveUpAfterMs: number;
}

/** 5 s, 10 s, 20 s, ... up to 10 minutes between attempts; a delivery is abandoned after 3 days. */
export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = {
  firstDelayMs: 5_000,
  maxDelayMs: 10 * 60_000,
  giveUpAfterMs: 3 * 24 * 3600_000,
};

/**
 * The wait before the next attempt after `attempts` failed ones: doubling from
 * `firstDelayMs`, capped, with the upper quarter randomized so that many daemons (or many
 * deliveries) that failed together do not retry together. A `Retry-After` longer than
 * that wins, up to the cap.
 */
export function nextDelayMs(
  schedule: RetrySchedule,
  attempts: number,
  retryAfterMs: number | undefined,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(attempts - 1, 0), 30);
  const base = Math.min(schedule.maxDelayMs, schedule.firstDelayMs * 2 ** exponent);
  const jittered = base * (0.75 + 0.25 * random());
  return Math.round(Math.min(schedule.maxDelayMs, Math.max(jittered, retryAfterMs ?? 0)));
}
