import type { FailureKind } from "@gstack/contracts";

/**
 * Why a run failed, as far as retrying is concerned:
 * - `rate_limit`: back off, then retry as-is.
 * - `context_overflow`: the prompt did not fit; retry once without the learnings.
 * - `tool_failure`: a transient server or tool error; retry as-is.
 * - `auth`: bad key or billing; no retry, a person must act.
 * - `logic_error`: the agent could not do the task (max turns, refusal, unexplained exit); no retry.
 * - `timeout` / `cancelled`: stopped from outside; no retry.
 * - `spawn_error`: the program could not be started; no retry.
 * - `budget_exhausted`: the run's spend reached its cap (the runner's or the CLI's own); no retry.
 * - `spawn_error`: the program could not be started, or is a stub of a CLI not installed; no retry.
 * - `agent_crashed`: the CLI died (a signal, or an exit with no final report and no known cause);
 *   no retry, the CLI needs looking at.
 * The kinds are the completion contract's `FailureKind`.
 */
export type { FailureKind };

/** A classified failure. */
export interface AgentFailure {
  kind: FailureKind;
  /** Whether one more attempt may succeed. */
  retryable: boolean;
  /** The retry should leave the dispatch learnings out of the prompt. */
  retryWithoutLearnings: boolean;
  /** A readable sentence for reports. */
  message: string;
  /** Which signal decided it, e.g. `result.api_error_status=429` or `prose`. */
  evidence: string;
}

/** The kinds this package produces. */
export const failureKinds: readonly FailureKind[] = [
  "rate_limit",
  "context_overflow",
  "tool_failure",
  "auth",
  "logic_error",
  "timeout",
  "cancelled",
  "spawn_error",
  "budget_exhausted",
  "agent_crashed",
];
