import { parseArgs } from "node:util";
import type { StatusArgs } from "./status-run";

/*
 * A plain `gstack-dispatch status` is what people and scripts run most, often in a loop: it
 * starts without the command-line library and the other commands' tree. Only the arguments the
 * status command takes, in the plain forms, are handled here; anything else (help, an unknown
 * flag, a flag without its value) goes the usual way, which explains it as it does for every
 * command.
 */

/** The status arguments in `rawArgs` (what follows `status`), or undefined for the usual way. */
export function quickStatusArgs(rawArgs: readonly string[]): StatusArgs | undefined {
  try {
    const { values, positionals } = parseArgs({
      args: [...rawArgs],
      options: { root: { type: "string" }, json: { type: "boolean" } },
      allowPositionals: true,
      strict: true,
    });
    if (positionals.length > 1 || typeof values.root === "object") return undefined;
    return {
      ...(values.root !== undefined ? { root: values.root } : {}),
      ...(positionals[0] !== undefined ? { id: positionals[0] } : {}),
      ...(values.json ? { json: true } : {}),
    };
  } catch {
    return undefined;
  }
}
