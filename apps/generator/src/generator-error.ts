const marker = Symbol.for("@gstack/generator.GeneratorError");

/** What went wrong, as a stable code a caller can branch on. */
export type GeneratorErrorCode =
  | "frontmatter"
  | "placeholder"
  | "skill-name"
  | "description"
  | "version"
  | "slug"
  | "input"
  | "resolvers";

/**
 * Thrown when a skill or template cannot be turned into OpenClaw output. The message names
 * the file, and the line when one is known, then the rule that was broken.
 */
export class GeneratorError extends Error {
  readonly [marker] = true;
  override readonly name = "GeneratorError";
  readonly code: GeneratorErrorCode;
  /** The file at fault, as given to the generator. */
  readonly file: string | undefined;
  /** 1-based line in `file`, when the problem has one. */
  readonly line: number | undefined;

  constructor(options: {
    code: GeneratorErrorCode;
    message: string;
    file?: string;
    line?: number;
    cause?: unknown;
  }) {
    const where = options.file ? `${options.file}${options.line ? `:${options.line}` : ""}: ` : "";
    super(`${where}${options.message}`, { cause: options.cause });
    this.code = options.code;
    this.file = options.file;
    this.line = options.line;
  }

  /** True for a GeneratorError from any copy of this package. */
  static isInstance(value: unknown): value is GeneratorError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}
