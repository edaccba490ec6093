import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type AgentFailure, failureKinds } from "./agent-failure";
import { decideRetry } from "./retry-policy";

function failureOf(kind: AgentFailure["kind"]): AgentFailure {
  const retryable = kind === "rate_limit" || kind === "context_overflow" || kind === "tool_failure";
  return {
    kind,
    retryable,
    retryWithoutLearnings: kind === "context_overflow",
    message: kind,
    evidence: "test",
  };
}

describe("decideRetry", () => {
  it("backs off before retrying a rate limit as-is", () => {
    expect(decideRetry(failureOf("rate_limit"), 1, true, { rateLimitDelayMilliseconds: 1234 })).toEqual({
      action: "retry",
      dropLearnings: false,
      delayMilliseconds: 1234,
      reason: "Retrying after rate_limit.",
    });
  });

  it("retries a context overflow at once without learnings, and escalates when there were none", () => {
    expect(decideRetry(failureOf("context_overflow"), 1, true)).toMatchObject({
      action: "retry",
      dropLearnings: true,
      delayMilliseconds: 0,
    });
    expect(decideRetry(failureOf("context_overflow"), 1, false).action).toBe("escalate");
  });

  it("retries transient failures and never auth, logic errors, timeouts, cancels or spawn errors", () => {
    expect(decideRetry(failureOf("tool_failure"), 1, true).action).toBe("retry");
    for (const kind of ["auth", "logic_error", "timeout", "cancelled", "spawn_error"] as const) {
      expect(decideRetry(failureOf(kind), 1, true).action).toBe("escalate");
    }
  });

  it("escalates every second failure, whatever it is", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...failureKinds),
        fc.integer({ min: 2, max: 100 }),
        fc.boolean(),
        (kind, attempt, learnings) => {
          expect(decideRetry(failureOf(kind), attempt, learnings)).toMatchObject({
            action: "escalate",
            dropLearnings: false,
          });
        },
      ),
    );
  });
});
