import { defineCommand, runCommand, runMain } from "citty";
import { version } from "../../package.json";
import { type CommandName, commandMeta } from "./command-meta";

const mainMeta = {
  name: "gstack-activity",
  version,
  description: "The weekly activity index of gstack and OpenClaw: what ran, where, and what it shipped",
};

const main = defineCommand({
  meta: mainMeta,
  subCommands: {
    log: () => import("./log-command").then((module) => module.default),
    week: () => import("./week-command").then((module) => module.default),
    ship: () => import("./ship-command").then((module) => module.default),
    query: () => import("./query-command").then((module) => module.default),
    last: () => import("./last-command").then((module) => module.default),
    "import-timeline": () => import("./import-timeline-command").then((module) => module.default),
  },
});

/**
 * The same command tree with only names and descriptions: the top-level help and version
 * render from it without loading a single command (start-up is what an agent calling the
 * CLI many times a conversation waits for).
 */
const outline = defineCommand({
  meta: mainMeta,
  subCommands: Object.fromEntries(Object.values(commandMeta).map((meta) => [meta.name, { meta }])),
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
const namesCommand = rawArgs.length > 0 && Object.hasOwn(commandMeta, rawArgs[0] as CommandName);
if (wantsHelp) {
  await runMain(namesCommand ? main : outline, { rawArgs: rawArgs.length === 0 ? ["--help"] : rawArgs });
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
