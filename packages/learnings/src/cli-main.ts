import { type ArgsDef, type CommandDef, defineCommand, renderUsage, runCommand } from "citty";
import { commonArgs } from "./cli-args";
import { LearningsError } from "./errors";
import type { SyncReport } from "./project-sync";

// Start-up is what a caller waits for on every call: only citty and the command definitions
// load here, so `--help` stays near a bare `node`. A command imports contracts, the sync and
// the search when it runs, with Node's on-disk compile cache (NODE_DISABLE_COMPILE_CACHE=1
// turns it off) making that quicker after the first run.

function printReport(report: SyncReport, json: boolean, steps: { import: boolean; export: boolean }): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  for (const warning of report.warnings) {
    process.stderr.write(
      `warning: ${warning.file}${warning.line ? `:${warning.line}` : ""}: ${warning.message}\n`,
    );
  }
  for (const problem of report.problems) {
    process.stderr.write(`warning: ${problem.file}:${problem.line}: ${problem.message}\n`);
  }
  for (const item of report.blocked) {
    const rules = [...new Set(item.findings.map((finding) => `${finding.rule} in ${finding.field}`))].join(
      ", ",
    );
    process.stderr.write(
      `blocked: ${item.file}:${item.line} ${item.type}/${item.key} looks like prompt injection (${rules})\n`,
    );
  }
  const parts: string[] = [];
  if (steps.import) parts.push(`imported ${report.imported} into ${report.learningsFile}`);
  if (steps.export) {
    parts.push(
      `${report.written ? "wrote" : "kept"} ${report.exported} learnings in ${report.memoryFile}${report.written ? "" : " (unchanged)"}`,
    );
    if (report.pending > 0) parts.push(`${report.pending} memory edits not imported yet (run sync)`);
  }
  if (report.blocked.length > 0) parts.push(`${report.blocked.length} blocked`);
  process.stdout.write(`${report.project}: ${parts.join("; ")}\n`);
}

function bridgeCommand(name: string, description: string, steps: { import: boolean; export: boolean }) {
  return defineCommand({
    meta: { name, description },
    args: commonArgs,
    async run({ args }) {
      const [{ resolveTargets }, { exportProject, importProject, syncProject }] = await Promise.all([
        import("./cli-options"),
        import("./project-sync"),
      ]);
      const targets = resolveTargets(args);
      const action =
        steps.import && steps.export ? syncProject : steps.import ? importProject : exportProject;
      const report = await action(targets);
      printReport(report, args.json, steps);
    },
  });
}

const search = defineCommand({
  meta: { name: "search", description: "Search gstack learnings and OpenClaw memory (read-only)" },
  args: {
    query: {
      type: "positional",
      description: "words to look for (any of them)",
      required: false,
      default: "",
    },
    type: { type: "string", description: "only this learning type" },
    limit: { type: "string", description: "at most this many learnings (default 10)" },
    "memory-limit": {
      type: "string",
      description: "at most this many OpenClaw memory paragraphs (default 3)",
    },
    "cross-project": {
      type: "boolean",
      description: "include other projects' trusted learnings",
      default: false,
    },
    ...commonArgs,
  },
  async run({ args }) {
    const [{ parseCountArg, parseTypeArg, resolveTargets }, { searchLearnings }] = await Promise.all([
      import("./cli-options"),
      import("./search-learnings"),
    ]);
    const targets = resolveTargets(args);
    const outcome = await searchLearnings({
      ...targets,
      query: args.query,
      type: parseTypeArg(args.type),
      limit: parseCountArg("limit", args.limit, 10),
      memoryLimit: parseCountArg("memory-limit", args["memory-limit"], 3),
      crossProject: args["cross-project"],
    });
    if (args.json) {
      process.stdout.write(`${JSON.stringify(outcome, null, 2)}\n`);
      return;
    }
    for (const warning of outcome.warnings) {
      process.stderr.write(
        `warning: ${warning.file}${warning.line ? `:${warning.line}` : ""}: ${warning.message}\n`,
      );
    }
    for (const item of outcome.withheld) {
      process.stderr.write(
        `withheld: ${item.file}:${item.line} looks like prompt injection (${item.rules.join(", ")})\n`,
      );
    }
    for (const result of outcome.results) {
      const where = `${result.side} ${result.file}:${result.line}`;
      if (result.kind === "learning") {
        const date = result.ts ? `, ${result.ts.slice(0, 10)}` : "";
        const cross = result.crossProject ? ` [project ${result.project}]` : "";
        process.stdout.write(
          `- [${result.type}/${result.key}] (confidence ${result.confidence}/10${date})${cross} ${where}\n`,
        );
      } else {
        process.stdout.write(`- [memory] ${where}\n`);
      }
      process.stdout.write(`  ${result.text.split("\n").join("\n  ")}\n`);
    }
  },
});

/** The `gstack-learnings` command. */
export const main = defineCommand({
  meta: {
    name: "gstack-learnings",
    version: "0.1.0",
    description: "One memory for gstack and OpenClaw: sync, export, import and search learnings",
  },
  subCommands: {
    sync: bridgeCommand("sync", "Import OpenClaw's learnings into gstack, then rewrite the memory file", {
      import: true,
      export: true,
    }),
    export: bridgeCommand("export", "Write memory/gstack-<project>.md from gstack's learnings", {
      import: false,
      export: true,
    }),
    import: bridgeCommand("import", "Import learnings recorded in OpenClaw's memory into gstack", {
      import: true,
      export: false,
    }),
    search,
  },
});

async function usageFor(rawArgs: string[]): Promise<string> {
  const name = rawArgs.find((arg) => !arg.startsWith("-"));
  const subCommands = main.subCommands as Record<string, CommandDef<ArgsDef>>;
  const command = name === undefined ? undefined : subCommands[name];
  return command
    ? renderUsage(command, main as CommandDef<ArgsDef>)
    : renderUsage(main as CommandDef<ArgsDef>);
}

async function cli(rawArgs: string[]): Promise<number> {
  if (rawArgs.length === 0 || rawArgs.includes("--help") || rawArgs.includes("-h")) {
    process.stdout.write(`${await usageFor(rawArgs)}\n`);
    return 0;
  }
  if (rawArgs.length === 1 && (rawArgs[0] === "--version" || rawArgs[0] === "-v")) {
    process.stdout.write("0.1.0\n");
    return 0;
  }
  try {
    await runCommand(main, { rawArgs });
    return 0;
  } catch (error) {
    const [{ ContractError }, { errorLine }] = await Promise.all([
      import("@gstack/contracts"),
      import("./cli-options"),
    ]);
    process.stderr.write(`gstack-learnings: ${errorLine(error)}\n`);
    const badInput =
      (LearningsError.isInstance(error) && error.code === "invalid-argument") ||
      ContractError.isInstance(error) ||
      (error as { name?: string })?.name === "CLIError";
    return badInput ? 2 : 1;
  }
}

process.exitCode = await cli(process.argv.slice(2));
