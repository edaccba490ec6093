import { defineCommand, runCommand, runMain } from "citty";
import { version } from "../../package.json";

const main = defineCommand({
  meta: {
    name: "gstack-activity",
    version,
    description: "The weekly activity index of gstack and OpenClaw: what ran, where, and what it shipped",
  },
  subCommands: {
    log: () => import("./log-command").then((module) => module.default),
    week: () => import("./week-command").then((module) => module.default),
    ship: () => import("./ship-command").then((module) => module.default),
    query: () => import("./query-command").then((module) => module.default),
    last: () => import("./last-command").then((module) => module.default),
    "import-timeline": () => import("./import-timeline-command").then((module) => module.default),
  },
});

/** Lets the shared options come before the command too: `--root DIR week` means `week --root DIR`. */
function commandFirst(args: readonly string[]): string[] {
  let index = 0;
  while (index < args.length && args[index]!.startsWith("-")) index += args[index] === "--root" ? 2 : 1;
  if (index >= args.length) return [...args];
  return [args[index]!, ...args.slice(0, index), ...args.slice(index + 1)];
}

const rawArgs = commandFirst(process.argv.slice(2));
const wantsHelp =
  rawArgs.length === 0 ||
  rawArgs.some((arg) => arg === "--help" || arg === "-h") ||
  (rawArgs.length === 1 && (rawArgs[0] === "--version" || rawArgs[0] === "-v"));
if (wantsHelp) {
  await runMain(main, { rawArgs: rawArgs.length === 0 ? ["--help"] : rawArgs });
} else {
  try {
    await runCommand(main, { rawArgs });
  } catch (error) {
    const { describeError, exitCodeOf } = await import("./cli-support");
    const hint = error instanceof Error && error.name === "CLIError" ? " (see gstack-activity --help)" : "";
    process.stderr.write(`gstack-activity: ${describeError(error)}${hint}\n`);
    process.exitCode = exitCodeOf(error);
  }
}
