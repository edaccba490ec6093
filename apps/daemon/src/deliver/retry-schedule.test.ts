import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { classifyResponse, DEFAULT_RETRY_SCHEDULE, nextDelayMs, parseRetryAfter } from "./retry-schedule";

const seed = Number(process.env.FC_SEED ?? Date.now() % 1_000_000);
console.log(`retry-schedule properties: fast-check seed ${seed}`);

describe("classifyResponse", () => {
  it("ends delivery on refusals that will answer the same next time", () => {
    for (const status of [400, 401, 403, 404, 405, 409, 410, 413, 415, 422]) {
      expect(classifyResponse(status, null, 0)).toEqual({ kind: "permanent", reason: `HTTP ${status}` });
    }
    expect(classifyResponse(307, null, 0).kind).toBe("permanent");
  });

  it("retries timeouts, too-early, rate limits and server errors", () => {
    for (const status of [408, 425, 429, 500, 502, 503, 504]) {
      expect(classifyResponse(status, null, 0).kind).toBe("transient");
    }
    expect(classifyResponse(429, "7", 0)).toEqual({
      kind: "transient",
      reason: "HTTP 429",
      retryAfterMs: 7000,
    });
    expect(classifyResponse(204, null, 0)).toEqual({ kind: "delivered", status: 204 });
  });
});

describe("parseRetryAfter", () => {
  it("reads delta seconds and HTTP dates, and ignores what it cannot read", () => {
    const now = Date.parse("2026-11-23T10:00:00Z");
    expect(parseRetryAfter("120", now)).toBe(120_000);
    expect(parseRetryAfter("Mon, 23 Nov 2026 10:01:00 GMT", now)).toBe(60_000);
    expect(parseRetryAfter("Mon, 23 Nov 2026 09:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it("round-trips any delta and any whole-second date", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        (now, seconds) => {
          const base = now * 1000;
          expect(parseRetryAfter(String(seconds), base)).toBe(seconds * 1000);
          expect(parseRetryAfter(new Date(base + seconds * 1000).toUTCString(), base)).toBe(seconds * 1000);
        },
      ),
      { seed },
    );
  });
});

describe("nextDelayMs", () => {
  it("doubles from the first delay, stays within the cap and the jitter band", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 200 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.option(fc.integer({ min: 0, max: 10 ** 9 }), { nil: undefined }),
        (attempts, random, retryAfter) => {
          const schedule = DEFAULT_RETRY_SCHEDULE;
          const delay = nextDelayMs(schedule, attempts, retryAfter, () => random);
          const base = Math.min(schedule.maxDelayMs, schedule.firstDelayMs * 2 ** Math.min(attempts - 1, 30));
          expect(delay).toBeLessThanOrEqual(schedule.maxDelayMs);
          expect(delay).toBeGreaterThanOrEqual(Math.min(Math.floor(base * 0.75), schedule.maxDelayMs));
          if (retryAfter !== undefined) {
            expect(delay).toBeGreaterThanOrEqual(Math.min(retryAfter, schedule.maxDelayMs));
          }
        },
      ),
      { seed },
    );
    expect(nextDelayMs(DEFAULT_RETRY_SCHEDULE, 1, undefined, () => 1)).toBe(5000);
    expect(nextDelayMs(DEFAULT_RETRY_SCHEDULE, 3, undefined, () => 1)).toBe(20_000);
    expect(nextDelayMs(DEFAULT_RETRY_SCHEDULE, 50, undefined, () => 0)).toBe(450_000);
  });
});
