import type { AgentFailure, FailureKind } from "./agent-failure";
import type { AgentProgress, AgentResultSummary } from "./agent-progress";

/** Everything known about how a run ended. */
export interface RunOutcome {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  cancelled: boolean;
  timedOut: boolean;
  /** The agent's final report, when it gave one. */
  result?: AgentResultSummary;
  progress?: Pick<AgentProgress, "assistantError" | "lastApiRetry" | "lastAssistantText">;
  /** The end of the agent's stderr, for the prose fallback. */
  stderrTail?: string;
  /** True when the agent reports through structured output (Claude Code stream-json). */
  expectsResult?: boolean;
  /** Which agent ran (`claude`, `codex`, …), so an authentication failure can say where its login lives. */
  agent?: string;
  cancelReason?: string;
  /** Set when the runner stopped the agent because its reported cost reached the cap. */
  budgetStop?: { spentUsd: number; budgetUsd: number };
}

function dollars(amount: number): string {
  return `$${amount.toFixed(2)}`;
}

const promptTooLong =
  /prompt is too long|prompt_too_long|context_length_exceeded|context (length|window)|maximum context|too many tokens/i;
const refusal =
  /^\s*(?:I(?:'m| am)? (?:cannot|can't|can not|am unable to|was unable to|couldn't|could not|won't be able to)|Unable to complete)\b/i;

/**
 * Where each agent CLI's key or login must be for the daemon to use it. A service manager does
 * not read shell profiles, so a key exported only there is not seen by the daemon it starts.
 */
const loginPlaces: Record<string, string> = {
  claude:
    "sign Claude Code in as the user the daemon runs as (`claude`, then /login; kept in ~/.claude/.credentials.json or the macOS keychain), or give the service ANTHROPIC_API_KEY in its own environment (`systemctl --user edit gstack-dispatch`, or the launchd plist's EnvironmentVariables), not only in a shell profile",
  codex:
    "sign Codex in as the user the daemon runs as (`codex login`; kept in ~/.codex/auth.json), or give the service OPENAI_API_KEY in its own environment, not only in a shell profile",
  gemini:
    "sign Gemini CLI in as the user the daemon runs as (kept in ~/.gemini/), or give the service GEMINI_API_KEY in its own environment, not only in a shell profile",
  cursor:
    "sign Cursor's agent in as the user the daemon runs as (`cursor-agent login`), or give the service CURSOR_API_KEY in its own environment, not only in a shell profile",
};

/** The sentence an authentication failure ends with: where the agent's key or login must live. */
export function loginHint(agent: string | undefined): string {
  return (
    loginPlaces[agent ?? "claude"] ??
    `sign ${agent} in as the user the daemon runs as, or give the service its key in its own environment`
  );
}

const notInstalled =
  /native binary not installed|command not found|No such file or directory.*(claude|codex|gemini|cursor)/i;
const crashed =
  /Segmentation fault|core dumped|Abort(ed)? trap|FATAL ERROR|JavaScript heap out of memory|Uncaught (\w*Error|Exception)|^\s*at .+:\d+:\d+\)?$/im;

function failure(kind: FailureKind, message: string, evidence: string): AgentFailure {
  return {
    kind,
    retryable: kind === "rate_limit" || kind === "context_overflow" || kind === "tool_failure",
    retryWithoutLearnings: kind === "context_overflow",
    message,
    evidence,
  };
}

function byStatus(status: number, detail: string): FailureKind | undefined {
  if (status === 429) return "rate_limit";
  if (status === 413) return "context_overflow";
  if (status === 400) return promptTooLong.test(detail) ? "context_overflow" : "logic_error";
  if (status === 401 || status === 402 || status === 403) return "auth";
  if (status === 408 || status === 409 || status >= 500) return "tool_failure";
  return undefined;
}

function byErrorName(name: string, detail: string): FailureKind | undefined {
  switch (name) {
    case "rate_limit":
    case "rate_limit_error":
      return "rate_limit";
    case "authentication_failed":
    case "authentication_error":
    case "billing_error":
    case "permission_error":
      return "auth";
    case "server_error":
    case "overloaded":
    case "overloaded_error":
    case "api_error":
      return "tool_failure";
    case "invalid_request":
    case "invalid_request_error":
      return promptTooLong.test(detail) ? "context_overflow" : undefined;
    default:
      return undefined;
  }
}

function byProse(detail: string): FailureKind | undefined {
  if (promptTooLong.test(detail)) return "context_overflow";
  if (/rate.?limit|\b429\b|usage limit|too many requests/i.test(detail)) return "rate_limit";
  if (
    /\b401\b|invalid (x-)?api.?key|authentication|unauthori[sz]ed|billing|credit balance|please run \/login|not logged in|log ?in again/i.test(
      detail,
    )
  ) {
    return "auth";
  }
  if (
    /overloaded|\b5(?:00|02|03|04|29)\b|internal server error|high demand|temporar(?:y|ily) (?:error|unavailable)|ECONNRESET|ETIMEDOUT|socket hang up/i.test(
      detail,
    )
  ) {
    return "tool_failure";
  }
  return undefined;
}

/**
 * Classifies how a run ended: `undefined` for success, otherwise an {@link AgentFailure}.
 * Structured fields decide first (result `terminal_reason`, `api_error_status`, `api_error_type`,
 * the assistant `error`, the CLI's own `api_retry` events), prose last, because the CLI's wording
 * changes between versions. Claude Code reports API failures as `subtype: "success"` with
 * `is_error: true`, so `is_error` is what counts.
 */
export function classifyFailure(outcome: RunOutcome): AgentFailure | undefined {
  const classified = classifyOutcome(outcome);
  if (classified?.kind !== "auth") return classified;
  return {
    ...classified,
    message: `${classified.message.replace(/[.\s]+$/, "")}. To fix: ${loginHint(outcome.agent)}.`,
  };
}

function classifyOutcome(outcome: RunOutcome): AgentFailure | undefined {
  const { result } = outcome;
  const detail = [result?.text, outcome.progress?.lastAssistantText, outcome.stderrTail]
    .filter(Boolean)
    .join("\n");
  const summary = (result?.text ?? outcome.stderrTail ?? "").trim().split("\n")[0]?.slice(0, 300) ?? "";

  if (outcome.cancelled) {
    return failure(
      "cancelled",
      `Cancelled${outcome.cancelReason ? `: ${outcome.cancelReason}` : ""}.`,
      "cancelled",
    );
  }
  if (outcome.timedOut)
    return failure("timeout", "The agent ran past its time limit and was stopped.", "timeout");
  if (outcome.budgetStop) {
    const { spentUsd, budgetUsd } = outcome.budgetStop;
    return failure(
      "budget_exhausted",
      `Spent ${dollars(spentUsd)} of its ${dollars(budgetUsd)} budget; the agent was stopped.`,
      "budget",
    );
  }

  const failed =
    result?.isError === true ||
    (result !== undefined && result.subtype !== "success") ||
    outcome.exitCode !== 0 ||
    outcome.signal !== null ||
    (outcome.expectsResult === true && result === undefined);

  if (!failed) {
    if (result?.text && refusal.test(result.text)) {
      return failure("logic_error", `The agent said it could not do the task: ${summary}`, "prose:refusal");
    }
    return undefined;
  }

  if (result?.terminalReason === "prompt_too_long") {
    return failure(
      "context_overflow",
      `The prompt did not fit the context window. ${summary}`.trim(),
      "result.terminal_reason=prompt_too_long",
    );
  }
  if (result?.apiErrorStatus !== undefined) {
    const kind = byStatus(result.apiErrorStatus, detail);
    if (kind) {
      return failure(
        kind,
        `API error ${result.apiErrorStatus}: ${summary}`,
        `result.api_error_status=${result.apiErrorStatus}`,
      );
    }
  }
  if (result?.apiErrorType) {
    const kind = byErrorName(result.apiErrorType, detail);
    if (kind)
      return failure(
        kind,
        `API error ${result.apiErrorType}: ${summary}`,
        `result.api_error_type=${result.apiErrorType}`,
      );
  }
  const assistantError = outcome.progress?.assistantError;
  if (assistantError) {
    const kind = byErrorName(assistantError, detail);
    if (kind)
      return failure(kind, `API error (${assistantError}): ${summary}`, `assistant.error=${assistantError}`);
  }
  if (result?.subtype === "error_max_turns" || result?.terminalReason === "max_turns") {
    return failure(
      "logic_error",
      "The agent used all its turns without finishing.",
      "result.subtype=error_max_turns",
    );
  }
  if (result?.subtype === "error_max_budget_usd" || result?.terminalReason === "budget_exhausted") {
    const spent = result.costUsd !== undefined ? `Spent ${dollars(result.costUsd)}: ` : "";
    return failure(
      "budget_exhausted",
      `${spent}the agent reached its budget without finishing.`,
      "result.subtype=error_max_budget_usd",
    );
  }
  if (result?.subtype === "error_during_execution") {
    return failure(
      "tool_failure",
      `The agent failed while running: ${summary}`,
      "result.subtype=error_during_execution",
    );
  }
  if (result === undefined && outcome.progress?.lastApiRetry) {
    const retry = outcome.progress.lastApiRetry;
    const kind =
      (retry.errorStatus !== undefined ? byStatus(retry.errorStatus, detail) : undefined) ??
      (retry.error ? byErrorName(retry.error, detail) : undefined);
    if (kind)
      return failure(
        kind,
        `The agent stopped while retrying an API error (${retry.errorStatus ?? retry.error}).`,
        "system/api_retry",
      );
  }
  const prose = byProse(detail);
  if (prose) return failure(prose, summary || "The agent failed.", "prose");
  if (result?.isError)
    return failure("logic_error", summary || "The agent reported an error.", "result.is_error");
  const how = outcome.signal ? `was killed by ${outcome.signal}` : `exited with code ${outcome.exitCode}`;
  if (result === undefined && notInstalled.test(outcome.stderrTail ?? "")) {
    return failure(
      "spawn_error",
      `The agent CLI is not installed properly: ${summary || how}`,
      "stderr:not-installed",
    );
  }
  if (result === undefined && (outcome.signal !== null || crashed.test(outcome.stderrTail ?? ""))) {
    return failure(
      "agent_crashed",
      `The agent CLI crashed (it ${how}${summary ? `: ${summary}` : ""}).`,
      outcome.signal ? `signal=${outcome.signal}` : "stderr:crash",
    );
  }
  if (outcome.expectsResult && result === undefined && outcome.exitCode === 0 && !outcome.signal) {
    return failure("logic_error", "The agent exited without a final result.", "no-result");
  }
  if (outcome.expectsResult && result === undefined) {
    return failure(
      "agent_crashed",
      `The agent CLI ${how} without a final report${summary ? `: ${summary}` : "."}`,
      "exit:no-result",
    );
  }
  return failure("logic_error", `The agent ${how}${summary ? `: ${summary}` : "."}`, "exit");
}
