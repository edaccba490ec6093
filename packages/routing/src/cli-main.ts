import { defineCommand, runMain } from "citty";
import type { RoutingTask } from "./routing-task";

// Start-up is what a caller waits for on every call: only citty and the command definitions
// load here, so `--help` at any level stays near a bare `node`. A command imports what it
// needs (contracts, yaml, the matcher) when it runs, and Node's on-disk compile cache
// (NODE_DISABLE_COMPILE_CACHE=1 turns it off) makes that quicker after the first run.

async function oneLine(error: unknown): Promise<string> {
  const { ContractError } = await import("@gstack/contracts");
  if (ContractError.isInstance(error)) {
    const issues = error.issues.map(
      (issue) => `${issue.path || "(document)"}: ${issue.message} [${issue.rule}]`,
    );
    return `${error.source}: invalid ${error.kind}: ${issues.join("; ")}`;
  }
  return error instanceof Error ? error.message : String(error);
}

async function runAction(body: () => Promise<void>): Promise<void> {
  try {
    await body();
  } catch (error) {
    process.stderr.write(`gstack-routing: ${await oneLine(error)}\n`);
    process.exitCode = 1;
  }
}

const common = {
  root: {
    type: "string",
    description: "gstack state root (default: GSTACK_HOME, CLAUDE_PLUGIN_DATA or ~/.gstack)",
  },
  "project-dir": {
    type: "string",
    description: "Project folder whose CLAUDE.md/AGENTS.md is read without routing.yaml",
  },
  json: { type: "boolean", description: "Print JSON instead of text", default: false },
} as const;

async function locationOf(args: { root?: string; "project-dir"?: string }) {
  const { resolveGstackHome } = await import("@gstack/contracts");
  return {
    root: args.root && args.root.length > 0 ? args.root : resolveGstackHome(process.env),
    ...(args["project-dir"] ? { projectDir: args["project-dir"] } : {}),
  };
}

/** `--files a,b --files c` → [a, b, c]. */
function listOf(value: unknown): string[] | undefined {
  if (value === undefined) return undefined;
  const values = Array.isArray(value) ? value.map(String) : [String(value)];
  return values.flatMap((entry) => entry.split(",")).filter((entry) => entry.length > 0);
}

const resolve = defineCommand({
  meta: { name: "resolve", description: "Which context to load and which skills to use for a task, and why" },
  args: {
    ...common,
    project: { type: "string", description: "Project slug" },
    "task-type": { type: "string", description: "Kind of work, e.g. security" },
    files: { type: "string", description: "Touched paths, comma-separated (repeatable)" },
    branch: { type: "string", description: "Branch the work is on" },
    agent: { type: "string", description: "Asking runtime or agent, e.g. gstack" },
  },
  run: ({ args }) =>
    runAction(async () => {
      const files = listOf(args.files);
      const task: RoutingTask = {
        ...(args.project ? { project: args.project } : {}),
        ...(args["task-type"] ? { task_type: args["task-type"] } : {}),
        ...(files ? { files } : {}),
        ...(args.branch ? { branch: args.branch } : {}),
        ...(args.agent ? { agent: args.agent } : {}),
      };
      const [{ routeTask }, { formatRoutingResult }] = await Promise.all([
        import("./route-task"),
        import("./format-routing-result"),
      ]);
      const result = await routeTask(task, await locationOf(args));
      if (args.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else process.stdout.write(`${formatRoutingResult(result)}\n`);
    }),
});

const check = defineCommand({
  meta: { name: "check", description: "Validate the routing configuration and say where it comes from" },
  args: common,
  run: ({ args }) =>
    runAction(async () => {
      const { loadRoutingTable } = await import("./load-routing-table");
      const table = await loadRoutingTable(await locationOf(args));
      if (args.json) {
        process.stdout.write(`${JSON.stringify(table, null, 2)}\n`);
        return;
      }
      const from = table.source.kind === "none" ? "no routing configuration found" : table.source.path;
      process.stdout.write(`${from}: ${table.routes.length} route(s)\n`);
      for (const warning of table.warnings) {
        process.stderr.write(
          `gstack-routing: ${warning.path ?? "routing"}:${warning.line}: ${warning.message}\n`,
        );
      }
    }),
});

void runMain(
  defineCommand({
    meta: {
      name: "gstack-routing",
      version: "0.1.0",
      description: "The routing table gstack and OpenClaw share",
    },
    subCommands: { resolve, check },
  }),
);
