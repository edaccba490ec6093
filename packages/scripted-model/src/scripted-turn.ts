/** Text the scripted model says, ending its turn (`stop_reason: end_turn`). */
export interface ScriptedTextTurn {
  type: "text";
  text: string;
}

/** A tool call (e.g. `Write` or `Bash`), optionally preceded by text; ends with `stop_reason: tool_use`. */
export interface ScriptedToolUseTurn {
  type: "tool_use";
  name: string;
  input: Record<string, unknown>;
  text?: string;
}

/** An HTTP error answer with the Messages API error body. */
export interface ScriptedErrorTurn {
  type: "error";
  status: number;
  /** Messages API error type, e.g. `rate_limit_error`; derived from the status when absent. */
  errorType?: string;
  message?: string;
  /** Sent as the `retry-after` header (seconds) when set. */
  retryAfterSeconds?: number;
}

/** Accept the request and never answer it: the connection stays open until the server closes. */
export interface ScriptedHangTurn {
  type: "hang";
}

export type ScriptedTurn = ScriptedTextTurn | ScriptedToolUseTurn | ScriptedErrorTurn | ScriptedHangTurn;

/** A turn plus how it is delivered. */
export type ScriptedStep = ScriptedTurn & {
  /** Serve this step for this many consecutive model requests (retries included). Default 1. */
  times?: number;
  /** Pause between streamed chunks, to imitate a slow stream. */
  chunkDelayMs?: number;
  /**
   * Hold the request open (counted by `hangingCount()`) until this settles, then answer: a
   * model turn a test keeps in progress for as long as it needs, and then lets finish.
   */
  holdUntil?: Promise<unknown>;
  /**
   * The input tokens the answer reports in its usage (default: the prompt's length over 4). A
   * large number makes the agent count a large cost, e.g. to reach a spend cap.
   */
  inputTokens?: number;
};

/** Shorthand constructors so scripts read like a conversation. */
export const scripted = {
  text: (text: string, extra: Partial<ScriptedStep> = {}): ScriptedStep => ({ ...extra, type: "text", text }),
  toolUse: (
    name: string,
    input: Record<string, unknown>,
    extra: Partial<Omit<ScriptedToolUseTurn, "type" | "name" | "input">> & Partial<ScriptedStep> = {},
  ): ScriptedStep => ({ ...extra, type: "tool_use", name, input }) as ScriptedStep,
  write: (filePath: string, content: string): ScriptedStep => ({
    type: "tool_use",
    name: "Write",
    input: { file_path: filePath, content },
  }),
  bash: (command: string, description = "Run a command"): ScriptedStep => ({
    type: "tool_use",
    name: "Bash",
    input: { command, description },
  }),
  error: (
    status: number,
    extra: Partial<Omit<ScriptedErrorTurn, "type" | "status">> & { times?: number } = {},
  ) => ({ ...extra, type: "error", status }) as ScriptedStep,
  rateLimited: (times = Number.POSITIVE_INFINITY): ScriptedStep => ({
    type: "error",
    status: 429,
    errorType: "rate_limit_error",
    message: "Number of request tokens has exceeded your per-minute rate limit (scripted)",
    retryAfterSeconds: 0,
    times,
  }),
  promptTooLong: (times = Number.POSITIVE_INFINITY): ScriptedStep => ({
    type: "error",
    status: 400,
    errorType: "invalid_request_error",
    message: "prompt is too long: 212345 tokens > 200000 maximum",
    times,
  }),
  overloaded: (times = Number.POSITIVE_INFINITY): ScriptedStep => ({
    type: "error",
    status: 529,
    errorType: "overloaded_error",
    message: "Overloaded (scripted)",
    times,
  }),
  unauthorized: (times = Number.POSITIVE_INFINITY): ScriptedStep => ({
    type: "error",
    status: 401,
    errorType: "authentication_error",
    message: "invalid x-api-key (scripted)",
    times,
  }),
  hang: (): ScriptedStep => ({ type: "hang", times: Number.POSITIVE_INFINITY }),
};

/** The Messages API error type that goes with an HTTP status. */
export function errorTypeForStatus(status: number): string {
  if (status === 400) return "invalid_request_error";
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "not_found_error";
  if (status === 413) return "request_too_large";
  if (status === 429) return "rate_limit_error";
  if (status === 529) return "overloaded_error";
  return "api_error";
}
