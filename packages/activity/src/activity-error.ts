const marker = Symbol.for("@gstack/activity.ActivityError");

/** Why an activity operation was refused. */
export type ActivityErrorCode =
  | "past-week"
  | "future-entry"
  | "entry-too-large"
  | "invalid-week"
  | "invalid-date"
  | "invalid-range"
  | "invalid-duration"
  | "invalid-count"
  | "import-busy"
  | "no-timeline";

/**
 * Thrown when the activity log refuses an input or an operation. The message is one
 * sentence a person can act on; `code` is stable for programs.
 */
export class ActivityError extends Error {
  readonly [marker] = true;
  override readonly name = "ActivityError";
  readonly code: ActivityErrorCode;

  constructor(code: ActivityErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options);
    this.code = code;
  }

  /** True for an ActivityError from any copy of this package. */
  static isInstance(value: unknown): value is ActivityError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}
