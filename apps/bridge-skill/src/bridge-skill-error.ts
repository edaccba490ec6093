const marker = Symbol.for("@gstack/bridge-skill.BridgeSkillError");

/** Why installing the skill failed. */
export type BridgeSkillErrorCode = "invalid-workspace" | "missing-skill" | "install-failed";

/** Thrown when the skill cannot be installed; the message names the path and what to fix. */
export class BridgeSkillError extends Error {
  readonly [marker] = true;
  override readonly name = "BridgeSkillError";
  readonly code: BridgeSkillErrorCode;
  /** The path at fault. */
  readonly path: string;

  constructor(code: BridgeSkillErrorCode, path: string, message: string, options: { cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.path = path;
  }

  /** True for a BridgeSkillError from any copy of this package. */
  static isInstance(value: unknown): value is BridgeSkillError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}
