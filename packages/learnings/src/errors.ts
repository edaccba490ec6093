const marker = Symbol.for("@gstack/learnings.LearningsError");

/** Why an operation of this package failed. */
export type LearningsErrorCode = "invalid-argument" | "invalid-file" | "lock-timeout" | "not-found";

/**
 * Thrown for bad input and unusable files. The message is one readable sentence that names
 * the file (and line, where there is one) and what to fix.
 */
export class LearningsError extends Error {
  readonly [marker] = true;
  override readonly name = "LearningsError";
  readonly code: LearningsErrorCode;
  /** The file at fault, when there is one. */
  readonly file: string | undefined;
  /** The 1-based line at fault, when there is one. */
  readonly line: number | undefined;

  constructor(
    code: LearningsErrorCode,
    message: string,
    options: { file?: string; line?: number; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.file = options.file;
    this.line = options.line;
  }

  /** True for a LearningsError from any copy of this package. */
  static isInstance(value: unknown): value is LearningsError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}
