import { resolve } from "node:path";
import { ContractError, gstackLayout, resolveGstackHome } from "@gstack/contracts";
import { DaemonError } from "@gstack/daemon-client";

export const rootArg = {
  root: { type: "string", description: "gstack state root (default: GSTACK_HOME, else ~/.gstack)" },
} as const;

export function layoutOf(args: { root?: string | undefined }) {
  return gstackLayout(args.root ? resolve(args.root) : resolveGstackHome(process.env));
}

/** Prints one readable line and exits non-zero. */
export function fail(error: unknown): never {
  const message = ContractError.isInstance(error)
    ? error.message
    : DaemonError.isInstance(error)
      ? error.message
      : (error as Error).message;
  // One line, as promised: a message over several lines (one per issue) is joined.
  const line = message
    .split("\n")
    .map((part) => part.trim())
    .filter(Boolean)
    .join("; ");
  process.stderr.write(`gstack-dispatch: ${line}\n`);
  process.exit(DaemonError.isInstance(error) ? error.exitCode : 1);
}

export function timestamped(line: string): void {
  process.stdout.write(`${new Date().toISOString().slice(11, 19)}  ${line}\n`);
}

/** The refusal in a service API answer as one sentence: the message, then the code. */
export function refusalLine(body: unknown, status: number): string {
  const error = body as { error?: string; message?: string };
  return error && typeof error.message === "string"
    ? `${error.message} (${error.error ?? `HTTP ${status}`})`
    : `the service API answered HTTP ${status}`;
}
