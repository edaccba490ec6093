import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { restrictionsToDisallowedTools } from "@gstack/agent-runner";
import { type GstackLayout, parseYaml } from "@gstack/contracts";
import type { OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";
import { readDispatchSettings } from "../gstack-settings";
import type { PluginSettings } from "../plugin-settings";
import { checkContractor, installContractor, uninstallContractor } from "./contractor-install";
import { resolveContractorSettings } from "./contractor-settings";
import { SessionMap } from "./session-map";
import { ensureSidecarKey } from "./sidecar-key";
import { releaseSidecar, startSidecarOnce } from "./sidecar-service";

/** Tool patterns no contractor turn may use, whatever the configuration grants (as for dispatches). */
const ALWAYS_DISALLOWED = [
  "Bash(git push --force:*)",
  "Bash(git push -f:*)",
  "Bash(rm -rf /:*)",
  "Bash(sudo:*)",
];
/** Granted beyond the dispatch defaults: handing a long task to the dispatch daemon. */
const CONTRACTOR_ALLOWED = ["Bash(gstack-dispatch submit:*)", "Bash(gstack-dispatch status:*)"];

/** The tool bans of dispatches: the fixed ones, `restrictions.yaml` and `dispatch.disallowed_tools`. */
export async function dispatchToolBans(layout: GstackLayout): Promise<string[]> {
  const bans = [...ALWAYS_DISALLOWED];
  try {
    const text = await readFile(layout.restrictions, "utf8");
    bans.push(
      ...restrictionsToDisallowedTools(
        parseYaml("restriction-template", text, { source: layout.restrictions }).restrictions,
      ),
    );
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  bans.push(...((await readDispatchSettings(layout)).disallowed_tools ?? []));
  return [...new Set(bans)];
}

/**
 * The contractor: a service that serves Claude Code as an OpenAI-compatible model on loopback
 * (once per gateway), and the `openclaw gstack-contractor install|uninstall|doctor` commands.
 */
export function registerContractor(
  api: OpenClawPluginApi,
  settings: PluginSettings,
  openclawStateDir: string,
): void {
  const contractor = resolveContractorSettings(api.pluginConfig?.contractor, settings.stateDir);
  const configPath = process.env.OPENCLAW_CONFIG_PATH ?? join(openclawStateDir, "openclaw.json");
  let serving: number | undefined;

  api.registerService({
    id: "gstack-contractor",
    async start() {
      if (!contractor.enabled) return;
      const key = await ensureSidecarKey(contractor.keyFile);
      const started = await startSidecarOnce(contractor, {
        key,
        sessions: new SessionMap(contractor.sessionsFile),
        claudeEnv: contractor.env,
        allowedTools: [...CONTRACTOR_ALLOWED, ...contractor.allowedTools],
        disallowedTools: await dispatchToolBans(settings.layout),
        log: api.logger,
        openclawSession: ({ agentId, sessionKey }) => {
          const entry = api.runtime.agent.session.getSessionEntry({
            ...(agentId ? { agentId } : {}),
            sessionKey,
            readConsistency: "latest",
          });
          if (!entry) return undefined;
          return {
            ...(entry.lifecycleRevision ? { lifecycle: entry.lifecycleRevision } : {}),
            ...(typeof entry.sessionStartedAt === "number" ? { startedAt: entry.sessionStartedAt } : {}),
          };
        },
      });
      if (started.kind === "failed") {
        api.logger.warn(`gstack contractor: not started: ${started.reason}`);
        return;
      }
      if (started.kind === "elsewhere") {
        api.logger.info(
          `gstack contractor: port ${started.port} is served by gateway process ${started.pid}`,
        );
        return;
      }
      serving = started.sidecar.port;
      api.logger.info(
        `gstack contractor: ${started.kind === "started" ? "serving" : started.kind === "reloaded" ? "serving with new settings (turns already running finish with the old)" : "sharing"} ${started.sidecar.url}`,
      );
    },
    async stop() {
      if (serving === undefined) return;
      const port = serving;
      serving = undefined;
      await releaseSidecar(port);
    },
  });

  api.registerCli(
    ({ program }) => {
      const command = program
        .command("gstack-contractor")
        .description("Claude Code with gstack as an OpenClaw agent's model (the contractor sidecar)");
      command
        .command("install")
        .description("Add the sidecar provider and a Claude Code agent to openclaw.json")
        .requiredOption("--project <folder>", "the folder Claude Code works in")
        .option("--agent <id>", "the agent id", undefined)
        .option("--port <port>", "the sidecar's loopback port", undefined)
        .option("--claude <program>", "the Claude Code program", undefined)
        .action(async (flags: { project: string; agent?: string; port?: string; claude?: string }) => {
          const written = await installContractor({
            configPath,
            pluginStateDir: settings.stateDir,
            projectDir: flags.project,
            ...(flags.agent ? { agentId: flags.agent } : {}),
            ...(flags.port ? { port: Number(flags.port) } : {}),
            ...(flags.claude ? { claudeBinary: flags.claude } : {}),
          });
          process.stdout.write(
            `installed: agent ${written.agentId} → ${written.providerId}/${written.modelId} on http://${written.host}:${written.port}/v1; restart the gateway\n`,
          );
        });
      command
        .command("uninstall")
        .description("Remove the sidecar provider, its agent and its settings from openclaw.json")
        .action(async () => {
          const removed = await uninstallContractor({ configPath, pluginStateDir: settings.stateDir });
          process.stdout.write(
            removed.length > 0 ? `removed: ${removed.join(", ")}\n` : "nothing to remove\n",
          );
        });
      command
        .command("doctor")
        .description("Check the contractor's setup")
        .action(async () => {
          const lines = await checkContractor({ configPath, pluginStateDir: settings.stateDir });
          for (const line of lines) process.stdout.write(`${line.ok ? "ok  " : "FAIL"} ${line.line}\n`);
          if (lines.some((line) => !line.ok)) process.exitCode = 1;
        });
    },
    {
      descriptors: [
        {
          name: "gstack-contractor",
          description: "Claude Code with gstack as an OpenClaw agent's model",
          hasSubcommands: true,
        },
      ],
    },
  );
}
