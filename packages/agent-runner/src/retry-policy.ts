import type { AgentFailure } from "./agent-failure";

/** What to do after a failed attempt. */
export interface RetryDecision {
  action: "retry" | "escalate";
  /** Build the next prompt without the dispatch learnings. */
  dropLearnings: boolean;
  /** Wait this long before the retry. */
  delayMilliseconds: number;
  reason: string;
}

export interface RetryPolicyOptions {
  /** Back-off before retrying a rate limit. Default 60 s. */
  rateLimitDelayMilliseconds?: number;
  /** Back-off before retrying a transient failure. Default 10 s. */
  transientDelayMilliseconds?: number;
}

/**
 * The retry rule: at most one retry, and a second failure always escalates. Rate limits and
 * transient failures are retried as they were (after a back-off); a context overflow is retried
 * once without the learnings, and escalates at once when there were no learnings to drop.
 *
 * @param failure the failure of the attempt that just ended
 * @param attempt which attempt that was, from 1
 * @param learningsIncluded whether that attempt's prompt carried learnings
 */
export function decideRetry(
  failure: AgentFailure,
  attempt: number,
  learningsIncluded: boolean,
  options: RetryPolicyOptions = {},
): RetryDecision {
  const escalate = (reason: string): RetryDecision => ({
    action: "escalate",
    dropLearnings: false,
    delayMilliseconds: 0,
    reason,
  });
  if (attempt >= 2)
    return escalate(`Attempt ${attempt} failed too (${failure.kind}); a second failure escalates.`);
  if (!failure.retryable) return escalate(`${failure.kind} is not worth retrying.`);
  if (failure.kind === "context_overflow") {
    if (!learningsIncluded) return escalate("The prompt is too long even without learnings.");
    return {
      action: "retry",
      dropLearnings: true,
      delayMilliseconds: 0,
      reason: "Retrying without learnings.",
    };
  }
  const delayMilliseconds =
    failure.kind === "rate_limit"
      ? (options.rateLimitDelayMilliseconds ?? 60_000)
      : (options.transientDelayMilliseconds ?? 10_000);
  return {
    action: "retry",
    dropLearnings: false,
    delayMilliseconds,
    reason: `Retrying after ${failure.kind}.`,
  };
}
