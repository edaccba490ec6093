import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { OpenClawPluginApi, OpenClawPluginToolContext } from "openclaw/plugin-sdk/plugin-entry";
import { answerTool } from "./answer-tool";
import { awaitingInbox, followAwaitingFolder } from "./awaiting-follower";
import { briefParameters, runBriefTool, runSendDraftTool, sendDraftParameters } from "./brief-tool";
import { completionCallbackHandler } from "./callback-route";
import { cancelParameters, runCancelTool } from "./cancel-tool";
import { completionInbox, followCompletedFolder } from "./completion-follower";
import { deliveredLedger } from "./delivered-ledger";
import { dispatchParameters, runDispatchTool } from "./dispatch-tool";
import {
  listHandoffsParameters,
  resumeHandoffParameters,
  runListHandoffsTool,
  runResumeHandoffTool,
} from "./handoff-tools";
import { logHostRangeOnce, runningOpenClaw } from "./host-range";
import { landTool } from "./land-tool";
import { learningsCorpus } from "./learnings-corpus";
import { learningsParameters, runLearningsTool } from "./learnings-tool";
import { REVIEW_PATH, resolvePluginSettings } from "./plugin-settings";
import { reportOutbox } from "./report-outbox";
import { reportParameters, runReportTool } from "./report-tool";
import { readSessionState } from "./review/dispatch-view";
import { reviewLinks } from "./review/links";
import { HOW_TO_SET_BASE, publicBase } from "./review/public-base";
import { reviewHandler } from "./review/route";
import { runtimeSessionChannel } from "./session-delivery";
import { runShippedTool, shippedParameters } from "./shipped-tool";
import { registerContractor } from "./sidecar";
import { runStatusTool } from "./status-tool";
import type { ToolAnswer } from "./tool-answer";
import { failure, oneLine } from "./tool-answer";
import type { ToolSession } from "./tool-session";

interface ToolSpec {
  name: string;
  label: string;
  description: string;
  parameters: Record<string, unknown>;
  run: (session: ToolSession, params: unknown, context: OpenClawPluginToolContext) => Promise<ToolAnswer>;
}

/** Registers the tools, the completion service and the callback route on the host. */
export function registerGstackPlugin(api: OpenClawPluginApi): void {
  // On an OpenClaw outside the tested versions: one line in the gateway log, and on as usual.
  // (Not in a registration without a runtime, such as the CLI's command metadata pass.)
  const running = runningOpenClaw(api);
  if (running) logHostRangeOnce(running.version, (line) => api.logger.warn(line));

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
    {
      name: "gstack_status",
      label: "gstack status",
      description:
        "Whether the gstack daemon runs, and every running and queued dispatch with its live progress.",
      parameters: { type: "object", additionalProperties: false, properties: {} },
      run: () => runStatusTool(settings),
    },
    {
      name: "gstack_cancel",
      label: "gstack cancel",
      description: "Cancel a queued or running gstack dispatch by id.",
      parameters: cancelParameters,
      run: (_session, params) => runCancelTool(settings, params),
    },
    landTool(settings),
    answerTool(settings),
    {
      name: "gstack_report",
      label: "gstack report",
      description: "Read the full completion report of a finished gstack dispatch.",
      parameters: reportParameters,
      run: (_session, params) => runReportTool(settings, params),
    },
    {
      name: "gstack_handoffs",
      label: "gstack handoffs",
      description: "List gstack handoffs (paused coding work) waiting to be resumed.",
      parameters: listHandoffsParameters,
      run: (_session, params) => runListHandoffsTool(settings, params),
    },
    {
      name: "gstack_resume_handoff",
      label: "gstack resume handoff",
      description: "Resume a gstack handoff by dispatching it; its completion comes back to this session.",
      parameters: resumeHandoffParameters,
      run: (session, params) => runResumeHandoffTool(settings, session, params),
    },
    {
      name: "gstack_shipped",
      label: "gstack shipped",
      description: "What was shipped with gstack recently: sessions, time, projects and artifacts.",
      parameters: shippedParameters,
      run: (_session, params) => runShippedTool(settings, params),
    },
    {
      name: "gstack_learnings",
      label: "gstack learnings",
      description:
        "Search what gstack learned about a project (and the workspace memory), with where each came from.",
      parameters: learningsParameters,
      run: (_session, params, context) => runLearningsTool(settings, context.workspaceDir, params),
    },
    {
      name: "gstack_brief",
      label: "gstack brief",
      description:
        'Before the person works on a project ("going to code on baku"): its last sessions, open work, newest checkpoint with its resume prompt, top learnings, routing advice, and the next dispatch drafted but NOT sent. Show it in a few lines and ask; send only on the person\'s yes, with gstack_send_draft.',
      parameters: briefParameters,
      run: (session, params) => runBriefTool(settings, session, params),
    },
    {
      name: "gstack_send_draft",
      label: "gstack send draft",
      description:
        'Send a dispatch gstack_brief drafted, exactly as drafted, once the person said yes. Never without their word; sending the same draft again sends nothing more. Pass the draft_id the brief they answer shows ("Drafted dispatch draft-… (not sent)"); when you see none (a scheduled brief went to their channel from another session), call it without draft_id: the one draft shown to this person in the last 12 h is sent, and if there are several, none is sent and they are listed for you to ask which.',
      parameters: sendDraftParameters,
      run: (session, params) => runSendDraftTool(settings, session, params),
    },
  ];

  const ledger = deliveredLedger(settings.stateDir);
  const outbox = reportOutbox({
    stateDir: settings.stateDir,
    ledger,
    channel: runtimeSessionChannel(api),
    log: api.logger,
  });
  // The review page: on the gateway's own port, behind a capability each link carries. Its links
  // go where the person reaches the gateway (review.publicBaseUrl, else OpenClaw's own gateway
  // config); a gateway on loopback alone gives messages no link.
  const base = () =>
    publicBase(api.config as Parameters<typeof publicBase>[0], settings.review.publicBaseUrl);
  const links = reviewLinks(settings.review, async () => {
    const found = await base();
    return found.url ?? found.local;
  });
  const reviewLink = async (id: string): Promise<string | undefined> => {
    // Only where the person can reach it: a loopback address in a message is no link on a phone.
    if (!settings.review.enabled) return undefined;
    if (!(await readSessionState(settings.layout, id))) return undefined;
    try {
      if (!(await base()).url) return undefined;
      return await links.dispatch(id);
    } catch (error) {
      api.logger.warn(`gstack: no review link for ${id}: ${oneLine(error)}`);
      return undefined;
    }
  };
  const inbox = completionInbox(settings, ledger, outbox, reviewLink);

  const waiting = awaitingInbox(settings, ledger, outbox, reviewLink);

  let follower: ReturnType<typeof followCompletedFolder> | undefined;
  let awaitingFollower: ReturnType<typeof followAwaitingFolder> | undefined;
  api.registerService({
    id: "gstack-completions",
    async start() {
      await outbox.start();
      if (!settings.followCompletions) return;
      await mkdir(settings.layout.dispatch.completed, { recursive: true });
      follower = followCompletedFolder(settings, inbox, ledger, api.logger);
      await follower.ready;
      api.logger.info(`gstack: following ${settings.layout.dispatch.completed}`);
      await mkdir(settings.layout.dispatch.awaiting, { recursive: true });
      awaitingFollower = followAwaitingFolder(settings, waiting, api.logger);
      await awaitingFollower.ready;
    },
    async stop() {
      await follower?.close();
      follower = undefined;
      await awaitingFollower?.close();
      awaitingFollower = undefined;
      await outbox.close();
    },
  });

  registerContractor(api, settings, stateRoot);

  // gstack's learnings, with their provenance, as an extra corpus of OpenClaw's memory search.
  api.registerMemoryCorpusSupplement(learningsCorpus(settings));

  api.registerHttpRoute({
    path: settings.callbackPath,
    auth: "plugin",
    match: "exact",
    handler: completionCallbackHandler(settings, inbox, undefined, waiting),
  });

  // `openclaw gstack-review`: the link to this host's list (or one dispatch's page), for the person.
  api.registerCli(
    ({ program }) => {
      program
        .command("gstack-review")
        .description("Print a link to the review page of this host's gstack dispatches (or of one)")
        .option("--dispatch <id>", "the page of one dispatch instead of the list", undefined)
        .action(async (flags: { dispatch?: string }) => {
          if (flags.dispatch && !(await readSessionState(settings.layout, flags.dispatch))) {
            // Its page could only say so: the dispatch's daemon (and its work) is not on this host.
            process.stderr.write(
              `This host's gstack daemon has no dispatch ${flags.dispatch} (in ${settings.layout.dispatch.sessions}); a dispatch of a daemon on another machine is read there (gstack-dispatch logs ${flags.dispatch}).\n`,
            );
            process.exitCode = 1;
            return;
          }
          const found = await base();
          const link = flags.dispatch ? await links.dispatch(flags.dispatch) : await links.list();
          const days = Math.round((settings.review.ttlHours / 24) * 10) / 10;
          const where =
            found.url !== undefined
              ? `on ${found.url}, from ${found.from}`
              : `on this machine only: ${found.why}, so messages carry no link; to reach it from a phone, ${HOW_TO_SET_BASE}`;
          process.stdout.write(
            `${link}\n(opens for ${days} days; anyone holding it can act on what it opens)\n(${where})\n`,
          );
        });
    },
    {
      descriptors: [
        {
          name: "gstack-review",
          description: "Print a link to the gstack review page",
          hasSubcommands: false,
        },
      ],
    },
  );

  if (settings.review.enabled) {
    api.registerHttpRoute({
      path: REVIEW_PATH,
      // The page checks its own capability; the person needs no gateway token to open a link.
      auth: "plugin",
      match: "prefix",
      handler: reviewHandler(settings, links),
    });
  }

  for (const tool of tools) {
    api.registerTool(
      (context: OpenClawPluginToolContext) => ({
        name: tool.name,
        label: tool.label,
        description: tool.description,
        parameters: tool.parameters,
        async execute(_toolCallId: string, params: unknown) {
          try {
            return await tool.run(sessionOf(context), params, context);
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
    ...routeOf(context.deliveryContext),
  };
}

function routeOf(delivery: OpenClawPluginToolContext["deliveryContext"]): Pick<ToolSession, "route"> {
  const channel = delivery?.channel?.trim();
  const to = delivery?.to?.trim();
  if (!channel || !to) return {};
  const accountId = delivery?.accountId?.trim();
  const threadId = delivery?.threadId === undefined ? "" : String(delivery.threadId).trim();
  return {
    route: { channel, to, ...(accountId ? { accountId } : {}), ...(threadId ? { threadId } : {}) },
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
