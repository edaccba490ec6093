import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { expandHome, resolveOpenClawWorkspace } from "@gstack/contracts";
import { defineCommand, runCommand, runMain } from "citty";
import { findVersionMismatches } from "./check-openclaw-version";
import { formatPublishPlan } from "./clawhub";
import { formatReport } from "./format-report";
import { buildFromFolder, checkFolder, type GenerateOptions, generateToFolder } from "./generate";
import { GeneratorError } from "./generator-error";
import { installToWorkspace } from "./install-workspace";
import { isUpToDate } from "./output-files";
import type { ResolverSet } from "./resolve-template";
import { watchSkills } from "./watch-skills";

class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

const sharedArgs = {
  input: {
    type: "string",
    description: "gstack folder (~/.claude/skills/gstack or a gstack checkout)",
    default: "~/.claude/skills/gstack",
  },
  out: {
    type: "string",
    description: "output folder for skills/, SOUL.md, AGENTS.md, clawhub.json",
    default: "openclaw",
  },
  resolvers: {
    type: "string",
    description:
      "module whose default export maps placeholder names to resolvers; reads SKILL.md.tmpl templates",
  },
  "skills-root": {
    type: "string",
    description: "OpenClaw skills folder written into paths",
    default: "~/.openclaw/workspace/skills",
  },
  "gstack-version": {
    type: "string",
    description: "gstack's four-part version (default: the input's VERSION file)",
  },
  json: { type: "boolean", description: "print the result as JSON", default: false },
} as const;

async function optionsFrom(args: Record<string, unknown>): Promise<GenerateOptions> {
  const options: GenerateOptions = {
    input: expandHome(String(args["input"])),
    output: expandHome(String(args["out"])),
    skillsRoot: String(args["skills-root"]),
  };
  if (typeof args["gstack-version"] === "string") options.gstackVersion = args["gstack-version"];
  if (typeof args["resolvers"] === "string") {
    const module = (await import(pathToFileURL(resolve(expandHome(args["resolvers"]))).href)) as {
      default?: ResolverSet;
      resolvers?: ResolverSet;
    };
    const resolvers = module.default ?? module.resolvers;
    if (!resolvers || typeof resolvers !== "object") {
      throw new GeneratorError({
        code: "resolvers",
        file: String(args["resolvers"]),
        message: "the module must export its resolvers as the default export or as `resolvers`",
      });
    }
    options.resolvers = resolvers;
  }
  return options;
}

function print(json: boolean, value: unknown, text: string): void {
  process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : text);
}

const generateCommand = defineCommand({
  meta: {
    name: "generate",
    description: "Generate OpenClaw skills, SOUL.md, the AGENTS.md section and the ClawHub plan",
  },
  args: {
    ...sharedArgs,
    check: {
      type: "boolean",
      description: "write nothing; exit 1 when the output folder is stale",
      default: false,
    },
    watch: { type: "boolean", description: "regenerate whenever a skill changes", default: false },
    strict: { type: "boolean", description: "exit 1 when any Claude-only reference is left", default: false },
  },
  async run({ args }) {
    const options = await optionsFrom(args);
    if (args.check) {
      const { report, difference } = await checkFolder(options);
      const stale = !isUpToDate(difference);
      const lines = [
        ...difference.missing.map((path) => `missing ${path}`),
        ...difference.changed.map((path) => `stale   ${path}`),
        ...difference.stale.map((path) => `extra   ${path}`),
      ];
      print(
        args.json,
        { upToDate: !stale, difference, report },
        stale ? `${lines.join("\n")}\n` : "output is up to date\n",
      );
      if (stale) throw new CliError(`${options.output} is stale: run gstack-openclaw-gen generate`, 1);
      return;
    }
    const result = await generateToFolder(options);
    print(
      args.json,
      { written: result.written, removed: result.removed, report: result.report },
      `${formatReport(result.report)}${result.written.length} file(s) written, ${result.removed.length} removed\n`,
    );
    if (result.report.errorCount > 0) throw new CliError("generated skills fail OpenClaw's validator", 1);
    if (args.strict && result.report.leftoverCount > 0)
      throw new CliError("Claude-only references are left", 1);
    if (args.watch) {
      const watcher = watchSkills({
        ...options,
        onResult: (change) =>
          print(
            args.json,
            change,
            `${change.changed.join(", ")} changed: ${change.written.length} file(s) written\n`,
          ),
        onError: (error) => process.stderr.write(`gstack-openclaw-gen: ${(error as Error).message}\n`),
      });
      await watcher.ready;
      process.stderr.write(`watching ${options.input}\n`);
      await new Promise<void>((resolveStop) => {
        const stop = () => void watcher.close().then(resolveStop);
        process.once("SIGINT", stop);
        process.once("SIGTERM", stop);
      });
    }
  },
});

const reportCommand = defineCommand({
  meta: {
    name: "report",
    description: "Show, per skill, the Claude-only references left and why (writes nothing)",
  },
  args: { ...sharedArgs },
  async run({ args }) {
    const { report } = await buildFromFolder(await optionsFrom(args));
    print(args.json, report, formatReport(report));
  },
});

const planCommand = defineCommand({
  meta: {
    name: "publish-plan",
    description: "Print the ClawHub publish commands for the bundle (a dry run)",
  },
  args: { ...sharedArgs },
  async run({ args }) {
    const { plan } = await buildFromFolder(await optionsFrom(args));
    if (!plan)
      throw new CliError("no gstack version: add a VERSION file to the input or pass --gstack-version", 2);
    print(args.json, plan, formatPublishPlan(plan));
  },
});

const installCommand = defineCommand({
  meta: {
    name: "install",
    description:
      "Generate and install into an OpenClaw workspace: skills, the AGENTS.md section, SOUL.md if none",
  },
  args: {
    ...sharedArgs,
    workspace: {
      type: "string",
      description:
        "OpenClaw workspace (default: OPENCLAW_WORKSPACE_DIR, OPENCLAW_PROFILE or ~/.openclaw/workspace)",
    },
    "openclaw-version": {
      type: "string",
      description: "the OpenClaw version in use; skills needing a newer one are reported",
    },
  },
  async run({ args }) {
    const bundle = await buildFromFolder(await optionsFrom(args));
    if (bundle.report.errorCount > 0) throw new CliError("generated skills fail OpenClaw's validator", 1);
    const workspace =
      typeof args.workspace === "string"
        ? resolve(expandHome(args.workspace))
        : resolveOpenClawWorkspace(process.env);
    const result = await installToWorkspace(bundle, workspace);
    const mismatches =
      typeof args["openclaw-version"] === "string"
        ? findVersionMismatches(bundle, args["openclaw-version"])
        : [];
    for (const mismatch of mismatches) {
      process.stderr.write(
        `warning: ${mismatch.skill} needs OpenClaw ${mismatch.requires} or newer; this is ${mismatch.running}\n`,
      );
    }
    const soulNote = result.keptOwnSoul ? "; kept your SOUL.md (gstack's is in skills/gstack/SOUL.md)" : "";
    print(
      args.json,
      { workspace, ...result, mismatches, report: bundle.report },
      `${formatReport(bundle.report)}installed into ${workspace}: ${result.written.length} file(s) written, ${result.removed.length} removed${soulNote}\n`,
    );
  },
});

const main = defineCommand({
  meta: {
    name: "gstack-openclaw-gen",
    version: "0.1.0",
    description: "Generate OpenClaw skills and a ClawHub bundle from gstack's skills",
  },
  subCommands: {
    generate: generateCommand,
    install: installCommand,
    report: reportCommand,
    "publish-plan": planCommand,
  },
});

function exitWith(error: unknown): never {
  const message = error instanceof Error ? error.message.split("\n")[0] : String(error);
  process.stderr.write(`gstack-openclaw-gen: ${message}\n`);
  process.exit(error instanceof CliError ? error.exitCode : GeneratorError.isInstance(error) ? 2 : 1);
}

/** The flags each command accepts, with and without `--no-` for booleans. */
function knownFlags(command: string): Set<string> | undefined {
  const definitions: Record<string, Record<string, { type: string }>> = {
    generate: generateCommand.args as Record<string, { type: string }>,
    install: installCommand.args as Record<string, { type: string }>,
    report: reportCommand.args as Record<string, { type: string }>,
    "publish-plan": planCommand.args as Record<string, { type: string }>,
  };
  const args = definitions[command];
  if (!args) return undefined;
  const flags = new Set<string>();
  for (const [name, definition] of Object.entries(args)) {
    flags.add(name);
    if (definition.type === "boolean") flags.add(`no-${name}`);
  }
  return flags;
}

/** Refuses a flag the command does not know, instead of ignoring it. */
function refuseUnknownFlags(rawArgs: readonly string[]): void {
  const command = rawArgs[0] ?? "";
  const flags = knownFlags(command);
  if (!flags) throw new CliError(`unknown command ${JSON.stringify(command)}; run with --help`, 2);
  for (const arg of rawArgs.slice(1)) {
    if (!arg.startsWith("--")) continue;
    const name = arg.slice(2).split("=")[0] ?? "";
    if (!flags.has(name)) {
      throw new CliError(`unknown option --${name} for ${command}; run ${command} --help for the options`, 2);
    }
  }
}

async function start(): Promise<void> {
  const rawArgs = process.argv.slice(2);
  const wantsUsage =
    rawArgs.length === 0 ||
    rawArgs.some((arg) => arg === "--help" || arg === "-h") ||
    (rawArgs.length === 1 && (rawArgs[0] === "--version" || rawArgs[0] === "-v"));
  if (wantsUsage) {
    await runMain(main);
    return;
  }
  try {
    refuseUnknownFlags(rawArgs);
    await runCommand(main, { rawArgs });
  } catch (error) {
    exitWith(error);
  }
}

void start();
