/** A `system/api_retry` event: the CLI is retrying a failed API call by itself. */
export interface ApiRetry {
  attempt?: number;
  maxRetries?: number;
  retryDelayMs?: number;
  errorStatus?: number;
  error?: string;
}

/** A tool call the CLI refused because it was not permitted. */
export interface PermissionDenial {
  toolName: string;
  toolUseId?: string;
  /** Short description of what was attempted, e.g. `Bash: rm -rf build`. */
  action: string;
}

/**
 * Tokens an agent says a run used (ACP: the `usage` of its `session/prompt` answer), as it
 * counts them; no cost is derived from them.
 */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  cachedReadTokens?: number;
  cachedWriteTokens?: number;
  thoughtTokens?: number;
}

/** What is known about a running agent, updated as its output arrives. */
export interface AgentProgress {
  /** Agent session id (Claude Code: from `system/init`). */
  sessionId?: string;
  model?: string;
  /** Assistant turns so far (distinct API messages); replaced by the result's `num_turns` at the end. */
  turns: number;
  /** Tool calls requested so far, and per tool name. */
  toolUses: number;
  toolUseCounts: Record<string, number>;
  /** Tool results marked as errors. */
  toolErrors: number;
  /** The latest text the agent said. */
  lastAssistantText?: string;
  /**
   * The last line the agent said that starts with `GSTACK_RESULT: `, as said (parse it with
   * `parseGstackResultLine`): how an unattended gstack skill reports its end and its run directory.
   */
  gstackResultLine?: string;
  /** The latest action, e.g. `Write src/x.ts` or `Bash: git commit -m "…"`. */
  lastAction?: string;
  /** Cost so far in USD, when the agent reports it. */
  costUsd?: number;
  /** Tokens used, when the agent reports them. */
  usage?: TokenUsage;
  /** The CLI's own API retries. */
  apiRetries: number;
  lastApiRetry?: ApiRetry;
  /** The latest `error` an assistant event carried (Claude Code: rate_limit, authentication_failed, …). */
  assistantError?: string;
  permissionDenials: PermissionDenial[];
  /** Context compactions the agent went through. */
  compactions: number;
  /** Parsed output events. */
  events: number;
  /** Output lines that were not JSON where JSON was expected. */
  invalidLines: number;
  /** Output lines over the length cap, skipped. */
  skippedLines: number;
  /** Output bytes read. */
  outputBytes: number;
  /** Time of the latest output, ISO 8601. */
  lastOutputAt?: string;
}

/** The agent's final report (Claude Code: the `result` event), reduced to what callers need. */
export interface AgentResultSummary {
  /** `success`, `error_max_turns`, `error_during_execution`, … (API failures also say `success`). */
  subtype: string;
  isError: boolean;
  /** HTTP status of the API failure that ended the run. */
  apiErrorStatus?: number;
  /** Messages API error type of that failure, e.g. `rate_limit_error`. */
  apiErrorType?: string;
  /** `completed`, `max_turns`, `prompt_too_long`, `api_error`, … */
  terminalReason?: string;
  stopReason?: string;
  /** The final text. */
  text?: string;
  numTurns?: number;
  durationMs?: number;
  costUsd?: number;
  /** Tokens used, when the agent reports them. */
  usage?: TokenUsage;
  sessionId?: string;
  permissionDenials: number;
}

/** A fresh, empty progress record. */
export function emptyProgress(): AgentProgress {
  return {
    turns: 0,
    toolUses: 0,
    toolUseCounts: {},
    toolErrors: 0,
    apiRetries: 0,
    permissionDenials: [],
    compactions: 0,
    events: 0,
    invalidLines: 0,
    skippedLines: 0,
    outputBytes: 0,
  };
}

/** A copy that callers may keep without seeing later changes. */
export function snapshotProgress(progress: AgentProgress): AgentProgress {
  return {
    ...progress,
    toolUseCounts: { ...progress.toolUseCounts },
    permissionDenials: progress.permissionDenials.map((denial) => ({ ...denial })),
    lastApiRetry: progress.lastApiRetry ? { ...progress.lastApiRetry } : undefined,
    usage: progress.usage ? { ...progress.usage } : undefined,
  };
}
