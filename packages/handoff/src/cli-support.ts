import { ContractError, resolveGstackHome } from "@gstack/contracts";
import { HandoffError } from "./handoff-error";

/** Exit status for bad input or a failed operation. */
export const EXIT_FAILURE = 1;

/** The state root a command works on: `--root`, else the environment's. */
export function rootOf(args: { root?: string }): string {
  return args.root && args.root.length > 0 ? args.root : resolveGstackHome(process.env);
}

/** Any error as one readable line (ContractError's issue list joined with "; "). */
export function oneLine(error: unknown): string {
  if (ContractError.isInstance(error)) {
    const issues = error.issues.map(
      (issue) => `${issue.path || "(document)"}: ${issue.message} [${issue.rule}]`,
    );
    return `${error.source}: invalid ${error.kind}: ${issues.join("; ")}`;
  }
  if (HandoffError.isInstance(error)) return error.message.replaceAll("\n", " ");
  if (error instanceof Error) {
    const code = (error as NodeJS.ErrnoException).code;
    return code ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}

/** Runs a command body; a failure prints one line to stderr and sets a non-zero exit status. */
export async function runAction(body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    process.stderr.write(`gstack-handoff: ${oneLine(error)}\n`);
    process.exitCode = EXIT_FAILURE;
  }
}

/** Prints a value as JSON on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Reads all of stdin as UTF-8. */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

/** Shared flags of every command. */
export const commonArgs = {
  root: {
    type: "string",
    description: "gstack state root (default: GSTACK_HOME, CLAUDE_PLUGIN_DATA or ~/.gstack)",
  },
  json: { type: "boolean", description: "Print JSON instead of text", default: false },
} as const;
