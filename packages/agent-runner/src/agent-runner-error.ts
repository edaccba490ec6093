const marker = Symbol.for("@gstack/agent-runner.AgentRunnerError");

/** Why starting or running an agent was refused. */
export type AgentRunnerErrorCode = "unsafe_option" | "invalid_option" | "spawn_failed" | "unknown_agent";

/** Thrown when an agent cannot be started as asked; the message says what to change. */
export class AgentRunnerError extends Error {
  readonly [marker] = true;
  override readonly name = "AgentRunnerError";
  readonly code: AgentRunnerErrorCode;

  constructor(code: AgentRunnerErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }

  /** True for an AgentRunnerError from any copy of this package. */
  static isInstance(value: unknown): value is AgentRunnerError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}
