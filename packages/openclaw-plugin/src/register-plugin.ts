import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { OpenClawPluginApi, OpenClawPluginToolContext } from "openclaw/plugin-sdk/plugin-entry";
import { completionCallbackHandler } from "./callback-route";
import { completionInbox, followCompletedFolder } from "./completion-follower";
import { deliveredLedger } from "./delivered-ledger";
import { dispatchParameters, runDispatchTool } from "./dispatch-tool";
import { resolvePluginSettings } from "./plugin-settings";
import { runtimeSessionDelivery } from "./session-delivery";
import type { ToolAnswer } from "./tool-answer";
import { failure, oneLine } from "./tool-answer";
import type { ToolSession } from "./tool-session";

interface ToolSpec {
  name: string;
  label: string;
  description: string;
  parameters: Record<string, unknown>;
  run: (session: ToolSession, params: unknown) => Promise<ToolAnswer>;
}

/** Registers the tools, the completion service and the callback route on the host. */
export function registerGstackPlugin(api: OpenClawPluginApi): void {
  const stateRoot = openclawStateDir(api);
  const settings = resolvePluginSettings(api.pluginConfig, stateRoot);

  const tools: ToolSpec[] = [
    {
      name: "gstack_dispatch",
      label: "gstack dispatch",
      description:
        "Hand a coding task to the gstack daemon (Claude Code runs it in a trusted repository). The completion report is posted into this session by itself when the work ends; do not poll.",
      parameters: dispatchParameters,
      run: (session, params) => runDispatchTool(settings, session, params),
    },
  ];

  const ledger = deliveredLedger(settings.stateDir);
  const inbox = completionInbox(settings, ledger, runtimeSessionDelivery(api));

  let follower: ReturnType<typeof followCompletedFolder> | undefined;
  api.registerService({
    id: "gstack-completions",
    async start() {
      if (!settings.followCompletions) return;
      await mkdir(settings.layout.dispatch.completed, { recursive: true });
      follower = followCompletedFolder(settings, inbox, api.logger);
      await follower.ready;
      api.logger.info(`gstack: following ${settings.layout.dispatch.completed}`);
    },
    async stop() {
      await follower?.close();
      follower = undefined;
    },
  });

  api.registerHttpRoute({
    path: settings.callbackPath,
    auth: "plugin",
    match: "exact",
    handler: completionCallbackHandler(settings, inbox),
  });

  for (const tool of tools) {
    api.registerTool(
      (context: OpenClawPluginToolContext) => ({
        name: tool.name,
        label: tool.label,
        description: tool.description,
        parameters: tool.parameters,
        async execute(_toolCallId: string, params: unknown) {
          try {
            return await tool.run(sessionOf(context), params);
          } catch (error) {
            return failure(`${tool.name} failed: ${oneLine(error)}.`);
          }
        },
      }),
      { name: tool.name },
    );
  }
}

function sessionOf(context: OpenClawPluginToolContext): ToolSession {
  return {
    ...(context.sessionKey ? { sessionKey: context.sessionKey } : {}),
    ...(context.agentId ? { agentId: context.agentId } : {}),
    ...(context.sessionId ? { sessionId: context.sessionId } : {}),
  };
}

function openclawStateDir(api: OpenClawPluginApi): string {
  try {
    return api.runtime.state.resolveStateDir(process.env);
  } catch {
    const home = process.env.OPENCLAW_STATE_DIR ?? join(process.env.HOME ?? ".", ".openclaw");
    return home;
  }
}
