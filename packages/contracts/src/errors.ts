const marker = Symbol.for("@gstack/contracts.ContractError");

/** One broken rule: where in the document, which rule, and what to do about it. */
export interface ContractIssue {
  /** Field path such as `routes[2].match.files[0]`; empty for the document itself. */
  path: string;
  /** Machine-readable rule name, e.g. `required`, `type`, `pattern`, `too_big`. */
  rule: string;
  /** A sentence a person can act on. */
  message: string;
}

/**
 * Thrown when a shared file or message breaks its contract. The message names the file
 * (or message source), every field path at fault and the rule each one broke.
 */
export class ContractError extends Error {
  readonly [marker] = true;
  override readonly name = "ContractError";
  /** What kind of document was being read, e.g. `dispatch`. */
  readonly kind: string;
  /** The file path or a description of where the document came from. */
  readonly source: string;
  readonly issues: readonly ContractIssue[];

  constructor(options: { kind: string; source: string; issues: ContractIssue[]; cause?: unknown }) {
    super(formatContractMessage(options.kind, options.source, options.issues), { cause: options.cause });
    this.kind = options.kind;
    this.source = options.source;
    this.issues = options.issues;
  }

  /** True for a ContractError from any copy of this package. */
  static isInstance(value: unknown): value is ContractError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}

function formatContractMessage(kind: string, source: string, issues: ContractIssue[]): string {
  const head = `${source}: invalid ${kind}`;
  if (issues.length === 0) return head;
  const lines = issues.map((issue) => `  - ${issue.path || "(document)"}: ${issue.message} [${issue.rule}]`);
  return `${head}\n${lines.join("\n")}`;
}
