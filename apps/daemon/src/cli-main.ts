import { defineCommand, runCommand, runMain } from "citty";
import { type CommandName, commandMeta } from "./commands/command-meta";
import { DAEMON_VERSION } from "./version";

const mainMeta = {
  name: "gstack-dispatch",
  version: DAEMON_VERSION,
  description: "The gstack dispatch daemon",
};

// Each command is loaded only when it runs, so the short ones start quickly.
const main = defineCommand({
  meta: mainMeta,
  subCommands: {
    run: () => import("./commands/run").then((module) => module.run),
    status: () => import("./commands/status").then((module) => module.status),
    submit: () => import("./commands/submit").then((module) => module.submit),
    logs: () => import("./commands/logs").then((module) => module.logs),
    cancel: () => import("./commands/cancel").then((module) => module.cancel),
    land: () => import("./commands/land").then((module) => module.land),
    discard: () => import("./commands/land").then((module) => module.discard),
    answer: () => import("./commands/answer").then((module) => module.answer),
    install: () => import("./commands/install").then((module) => module.install),
    uninstall: () => import("./commands/uninstall").then((module) => module.uninstall),
    doctor: () => import("./commands/doctor").then((module) => module.doctor),
    "clawvisor-serve": () => import("./commands/clawvisor-serve").then((module) => module.clawvisorServe),
    demo: () => import("./commands/demo").then((module) => module.demo),
  },
});

/** The same tree with names and descriptions only: the top-level help loads no command. */
const outline = defineCommand({
  meta: mainMeta,
  subCommands: Object.fromEntries(Object.values(commandMeta).map((meta) => [meta.name, { meta }])),
});

const rawArgs = process.argv.slice(2);
const wantsHelp =
  rawArgs.length === 0 ||
  rawArgs.some((arg) => arg === "--help" || arg === "-h") ||
  (rawArgs.length === 1 && (rawArgs[0] === "--version" || rawArgs[0] === "-v"));
const namesCommand = rawArgs.length > 0 && Object.hasOwn(commandMeta, rawArgs[0] as CommandName);
if (wantsHelp) {
  await runMain(namesCommand ? main : outline, { rawArgs: rawArgs.length === 0 ? ["--help"] : rawArgs });
} else if (!namesCommand) {
  process.stderr.write(
    `gstack-dispatch: unknown command ${JSON.stringify(rawArgs[0])}; one of ${Object.keys(commandMeta).join(", ")} (see gstack-dispatch --help)\n`,
  );
  process.exitCode = 1;
} else {
  try {
    await runCommand(main, { rawArgs });
  } catch (error) {
    // Wrong arguments (a missing id, an unknown flag value): one line, as every error here.
    const message = (error instanceof Error ? error.message : String(error)).split("\n")[0];
    process.stderr.write(`gstack-dispatch: ${message} (see gstack-dispatch ${rawArgs[0]} --help)\n`);
    process.exitCode = 1;
  }
}
