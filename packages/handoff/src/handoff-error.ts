const marker = Symbol.for("@gstack/handoff.HandoffError");

/** What went wrong, for programs; the message says it for people. */
export type HandoffErrorCode =
  | "resume-prompt-too-long"
  | "malformed-file"
  | "not-found"
  | "already-picked-up"
  | "busy"
  | "no-project-dir"
  | "no-resume-prompt"
  | "invalid-reference";

/**
 * A handoff could not be written, read or used. The message names the file or id and
 * what to do; `code` tells the cases apart.
 */
export class HandoffError extends Error {
  readonly [marker] = true;
  override readonly name = "HandoffError";
  readonly code: HandoffErrorCode;

  constructor(code: HandoffErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
  }

  /** True for a HandoffError from any copy of this package. */
  static isInstance(value: unknown): value is HandoffError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}
