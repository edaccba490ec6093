import type { AgentRunResult } from "@gstack/agent-runner";
import { type OpenAiError, openAiError } from "./openai-wire";

/**
 * The OpenAI-shaped error for a Claude Code turn that failed, or undefined when it did not.
 * A turn counts as failed when Claude Code says so (`is_error`, a non-zero exit) or it was
 * stopped; the kind comes from the agent runner's classification (structured fields first).
 */
export function turnError(run: AgentRunResult): OpenAiError | undefined {
  const failed =
    run.timedOut ||
    run.cancelled ||
    run.result?.isError === true ||
    run.exitCode !== 0 ||
    run.signal !== null ||
    run.result === undefined;
  if (!failed) return undefined;
  const detail = run.failure?.message ?? run.result?.text ?? run.stderrTail.trim().split("\n").at(-1) ?? "";
  const said = (prefix: string) => `${prefix}${detail ? ` (${detail.slice(0, 300)})` : ""}`;
  switch (run.failure?.kind) {
    case "rate_limit":
      return openAiError(
        429,
        "rate_limit_error",
        "rate_limit_exceeded",
        said("Claude Code hit a rate limit; try again later."),
      );
    case "auth":
      return openAiError(
        401,
        "authentication_error",
        "invalid_api_key",
        said(
          "Claude Code could not authenticate with its model provider; log in again (claude /login) or fix its API key.",
        ),
      );
    case "context_overflow":
      return openAiError(
        400,
        "invalid_request_error",
        "context_length_exceeded",
        said("The Claude Code session no longer fits its context window; start a new chat session (/new)."),
      );
    case "tool_failure":
      return run.result?.apiErrorStatus === 529 || /overload/i.test(detail)
        ? openAiError(
            503,
            "server_error",
            "overloaded",
            said("Claude's model service is overloaded; try again shortly."),
          )
        : openAiError(502, "server_error", "upstream_error", said("Claude's model service failed."));
    case "timeout":
      return openAiError(
        504,
        "server_error",
        "timeout",
        "The Claude Code turn ran past its time limit and was stopped.",
      );
    case "cancelled":
      return openAiError(499, "server_error", "cancelled", said("The Claude Code turn was stopped."));
    case "spawn_error":
      return openAiError(
        500,
        "server_error",
        "claude_not_started",
        said("Claude Code could not be started; check contractor.claudeBinary."),
      );
    default:
      return openAiError(500, "server_error", "claude_failed", said("The Claude Code turn failed."));
  }
}

/** Whether Claude Code refused `--resume` because it has no such session. */
export function resumeWasRefused(run: AgentRunResult): boolean {
  return /no conversation found|session .* not found/i.test(`${run.result?.text ?? ""}\n${run.stderrTail}`);
}
