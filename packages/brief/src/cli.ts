import { spawn } from "node:child_process";
import { defineCommand, runMain } from "citty";
import type { BriefOptions, BriefTarget } from "./brief-types";

/** What the terminal command reads besides the gstack files: the daemon's state and settings. */
export type BriefSources = (root: string | undefined) => Promise<BriefOptions>;

function fail(error: unknown): void {
  process.stderr.write(`gstack-brief: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}

/** Runs `openclaw` with the arguments and hands its output through; its exit code is ours. */
function runOpenClaw(bin: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, { stdio: "inherit" });
    child.on("error", reject);
    child.on("close", (code) => resolve(code ?? 1));
  });
}

/**
 * The `gstack-brief` command: `show` prints a project's brief (the draft is shown, not kept:
 * the agent keeps and sends drafts on the person's word); `schedule` sets up a scheduled brief
 * through OpenClaw's own scheduler, or prints the command that does.
 */
export function briefCli(sources: BriefSources) {
  const show = defineCommand({
    meta: {
      name: "show",
      description:
        "The brief of a project: last sessions, open work, checkpoint, learnings, the next dispatch drafted",
    },
    args: {
      project: {
        type: "positional",
        required: false,
        description: "The project, e.g. baku (default: the one worked on last)",
      },
      folder: { type: "string", description: "Or the repository folder" },
      root: {
        type: "string",
        description: "gstack state root (default: GSTACK_HOME, CLAUDE_PLUGIN_DATA or ~/.gstack)",
      },
      json: { type: "boolean", description: "Print the brief as JSON", default: false },
    },
    async run({ args }) {
      try {
        const { gatherBrief } = await import("./gather-brief");
        const { formatBrief } = await import("./format-brief");
        const target: BriefTarget = args.project
          ? { project: args.project }
          : args.folder
            ? { folder: args.folder }
            : { last: true };
        const brief = await gatherBrief(target, await sources(args.root || undefined));
        process.stdout.write(args.json ? `${JSON.stringify(brief, null, 2)}\n` : `${formatBrief(brief)}\n`);
      } catch (error) {
        fail(error);
      }
    },
  });
  const schedule = defineCommand({
    meta: {
      name: "schedule",
      description: "A brief on a schedule, through OpenClaw's scheduler, delivered to your channel",
    },
    args: {
      cron: {
        type: "string",
        description: 'Five-field cron, e.g. "0 9 * * 1-5" (weekdays at 9:00)',
        required: true,
      },
      tz: { type: "string", description: "Time zone, e.g. Europe/Berlin (default: the gateway's)" },
      channel: { type: "string", description: "Your channel's plugin id, e.g. telegram", required: true },
      to: { type: "string", description: "Your address on it", required: true },
      project: {
        type: "string",
        description: "Projects briefed every time, comma-separated (besides today's calendar)",
      },
      agent: { type: "string", description: "The OpenClaw agent that runs it" },
      apply: {
        type: "boolean",
        description: "Create it now with `openclaw automations create`",
        default: false,
      },
      openclaw: {
        type: "string",
        description: "The openclaw command (default: openclaw on PATH)",
        default: "openclaw",
      },
    },
    async run({ args }) {
      try {
        const { scheduleArguments } = await import("./schedule");
        const argv = scheduleArguments({
          cron: args.cron,
          channel: args.channel,
          to: args.to,
          ...(args.tz ? { tz: args.tz } : {}),
          ...(args.agent ? { agent: args.agent } : {}),
          ...(args.project
            ? {
                projects: args.project
                  .split(",")
                  .map((item) => item.trim())
                  .filter(Boolean),
              }
            : {}),
        });
        if (!args.apply) {
          const quoted = argv.map((item) =>
            /^[\w@%+=:,./-]+$/.test(item) ? item : `'${item.replaceAll("'", "'\\''")}'`,
          );
          process.stdout.write(`${[args.openclaw, ...quoted].join(" ")}\n`);
          return;
        }
        const code = await runOpenClaw(args.openclaw, argv);
        if (code !== 0) throw new Error(`${args.openclaw} automations create ended with exit code ${code}`);
      } catch (error) {
        fail(error);
      }
    },
  });
  return defineCommand({
    meta: {
      name: "gstack-brief",
      version: "0.1.0",
      description: "What to know before working on a project, and the next dispatch drafted",
    },
    subCommands: { show, schedule },
  });
}

/** Runs the command with the given sources (the bundled command passes the daemon's). */
export function runBriefCli(sources: BriefSources): Promise<void> {
  return runMain(briefCli(sources));
}
