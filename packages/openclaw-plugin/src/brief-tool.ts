import { join } from "node:path";
import {
  ANSWER_WINDOW_MS,
  type BriefTarget,
  type DraftAsker,
  type DraftRoute,
  draftStore,
  formatBrief,
  gatherBrief,
} from "@gstack/brief";
import type { BriefDraft } from "@gstack/contracts";
import { pickUpHandoff } from "@gstack/handoff";
import { z } from "zod";
import { briefOptions } from "./brief-sources";
import { parseToolInput, replyToOf, sendDispatch } from "./dispatch-tool";
import type { PluginSettings } from "./plugin-settings";
import { cutAtBreak } from "./text-cut";
import { answer, failure, type ToolAnswer } from "./tool-answer";
import type { ToolSession } from "./tool-session";

export const briefParameters = {
  type: "object",
  additionalProperties: false,
  properties: {
    project: {
      type: "string",
      description: "The project as the person names it, e.g. 'baku' (gstack's slug 'acme-baku' also works).",
    },
    folder: { type: "string", description: "Or the repository folder the person will work in." },
    last: { type: "boolean", description: "Or true for the project worked on last (the default)." },
  },
} as const;

const briefInput = z.strictObject({
  project: z.string().trim().min(1).optional(),
  folder: z.string().trim().min(1).optional(),
  last: z.boolean().optional(),
});

export const sendDraftParameters = {
  type: "object",
  additionalProperties: false,
  properties: {
    draft_id: {
      type: "string",
      description:
        "The draft the brief the person answers shows (draft-…). Leave it out only when no brief in this conversation shows one: then the one draft shown to this person in the last 12 h is sent.",
    },
  },
} as const;

const sendInput = z.strictObject({ draft_id: z.string().trim().min(1).optional() });

/** Where the brief given in this session goes, as a draft records it. */
function deliveredToOf(session: ToolSession): DraftRoute | undefined {
  const route = session.route;
  return route
    ? {
        channel: route.channel,
        to: route.to,
        ...(route.accountId ? { account_id: route.accountId } : {}),
        ...(route.threadId ? { thread_id: route.threadId } : {}),
      }
    : undefined;
}

/** Who says yes: their session and the route it answers on. */
function askerOf(session: ToolSession): DraftAsker {
  const route = deliveredToOf(session);
  return { ...(session.sessionKey ? { sessionKey: session.sessionKey } : {}), ...(route ? { route } : {}) };
}

/** How long ago, in the brief's own words ("2 h ago"). */
function agoText(at: string, now: Date): string {
  const minutes = Math.max(0, Math.round((now.getTime() - Date.parse(at)) / 60_000));
  return minutes < 60 ? `${minutes} min ago` : `${Math.round(minutes / 60)} h ago`;
}

/** One line naming a draft for the person to choose: id, project, task, age. */
function draftChoice(draft: BriefDraft, now: Date): string {
  const line = (draft.task.split("\n")[0] ?? draft.task).trim();
  const task = [...line].length > 120 ? `${cutAtBreak(line, 120)}…` : line;
  return `- ${draft.draft_id}: ${draft.project}, "${task}" (drafted ${agoText(draft.created_at, now)})`;
}

/** The drafts folder of the plugin's records. */
export function draftsOf(settings: PluginSettings) {
  return draftStore(join(settings.stateDir, "drafts"));
}

/**
 * `gstack_brief`: what to know before working on a project, and the next dispatch drafted and
 * kept (never sent here). The text ends with the draft's id, which `gstack_send_draft` takes.
 */
export async function runBriefTool(
  settings: PluginSettings,
  session: ToolSession,
  params: unknown,
  now = new Date(),
): Promise<ToolAnswer> {
  const input = parseToolInput(briefInput, params, "gstack_brief");
  if (!input.ok) return failure(input.sentence);
  const { project, folder } = input.value;
  if (project && folder) return failure("gstack_brief was not run: give a project or a folder, not both.");
  const target: BriefTarget = project ? { project } : folder ? { folder } : { last: true };
  const brief = await gatherBrief(target, await briefOptions(settings, now));
  let draft: BriefDraft | undefined;
  if (brief.draft) {
    const replyTo = replyToOf(session);
    const deliveredTo = deliveredToOf(session);
    draft = await draftsOf(settings).keep(brief.draft, {
      now,
      ...(replyTo ? { replyTo } : {}),
      ...(deliveredTo ? { deliveredTo } : {}),
    });
  }
  const text = formatBrief(brief, { now, ...(draft ? { draftId: draft.draft_id } : {}) });
  const ask = draft
    ? `\nAsk the person whether to send it; only on their yes call gstack_send_draft with draft_id ${draft.draft_id}.`
    : "";
  return answer(`${text}${ask}`, {
    ...(brief.project ? { project: brief.project } : {}),
    empty: brief.empty,
    sessions: brief.sessions.length,
    ...(brief.openWork ? { open_work: brief.openWork.length } : {}),
    ...(brief.checkpoint ? { checkpoint: brief.checkpoint.ref } : {}),
    ...(draft ? { draft_id: draft.draft_id } : {}),
  });
}

/**
 * `gstack_send_draft`: the person said yes. The kept draft becomes an ordinary dispatch with its
 * own fields and the id chosen when it was drafted; a draft already sent is not sent again. The
 * dispatch reports to the session that said yes. Without a draft id (the person answers a
 * scheduled brief, whose draft was made in the scheduler's own session), the one unsent draft
 * shown to this person in the last 12 h is sent; with several, none is, and they are listed.
 */
export async function runSendDraftTool(
  settings: PluginSettings,
  session: ToolSession,
  params: unknown,
  now = new Date(),
): Promise<ToolAnswer> {
  const input = parseToolInput(sendInput, params, "gstack_send_draft");
  if (!input.ok) return failure(input.sentence);
  if (input.value.draft_id) return sendDraft(settings, session, input.value.draft_id, now);
  const found = await draftsOf(settings).answerable(askerOf(session), { now });
  const unreadable =
    found.unreadable.length > 0
      ? ` (${found.unreadable.length} draft file${found.unreadable.length === 1 ? "" : "s"} could not be read: ${found.unreadable.map((item) => `${item.file}: ${item.reason}`).join("; ")})`
      : "";
  const [only, ...others] = found.unsent;
  if (only && others.length === 0) return sendDraft(settings, session, only.draft_id, now);
  if (only) {
    return answer(
      [
        `Nothing was sent: ${found.unsent.length} drafts are waiting for the person's word here. Ask which one to send, then call gstack_send_draft with its draft_id:`,
        ...found.unsent.map((draft) => draftChoice(draft, now)),
      ].join("\n") + unreadable,
      { sent: false, waiting: found.unsent.length },
    );
  }
  const [sent] = found.sent;
  if (sent?.sent) {
    return answer(
      `${sent.draft_id} was already sent as ${sent.sent.dispatch_id}; nothing was sent again.${unreadable}`,
      { dispatch_id: sent.sent.dispatch_id, draft_id: sent.draft_id, already_sent: true },
    );
  }
  const hours = Math.round(ANSWER_WINDOW_MS / 3_600_000);
  return failure(
    `Nothing was sent: no draft was shown to this person in the last ${hours} h. Call gstack_brief for a new one.${unreadable}`,
  );
}

/** Sends one kept draft, once, from the session that said yes. */
async function sendDraft(
  settings: PluginSettings,
  session: ToolSession,
  draftId: string,
  now: Date,
): Promise<ToolAnswer> {
  let reply: ToolAnswer | undefined;
  const replyTo = replyToOf(session);
  const outcome = await draftsOf(settings).send(
    draftId,
    async (draft) => {
      reply = await sendDispatch(
        settings,
        session,
        {
          id: draft.dispatch_id,
          task: draft.task,
          project: draft.project,
          project_dir: draft.project_dir,
          ...(draft.base ? { base: draft.base } : {}),
          ...(draft.branch ? { branch: draft.branch } : {}),
          ...(draft.budget_usd !== undefined ? { budget_usd: draft.budget_usd } : {}),
          ...(draft.mode ? { mode: draft.mode } : {}),
          ...(draft.handoff_id ? { handoff_id: draft.handoff_id } : {}),
          ...(draft.task_type ? { task_type: draft.task_type } : {}),
          ...(draft.learnings && draft.learnings.length > 0 ? { learnings: draft.learnings } : {}),
        },
        now,
      );
      if (reply.details.ok === true) return { sent: true, dispatchId: draft.dispatch_id };
      // The daemon already holds a dispatch with this id: an earlier send got through.
      if (reply.details.code === "duplicate") return { sent: true, dispatchId: draft.dispatch_id };
      return { sent: false, reason: reply.content[0]?.text ?? "the daemon refused it" };
    },
    { now, ...(replyTo ? { replyTo } : {}) },
  );
  if (outcome.outcome === "sent" && outcome.draft.source !== "open-work" && outcome.draft.source_ref) {
    // The checkpoint (or handoff) it continues is picked up, as gstack_resume_handoff does, so
    // the next brief does not draft the same work again.
    await pickUpHandoff(
      outcome.draft.source_ref,
      { by: settings.dispatchedBy },
      { root: settings.gstackHome },
    ).catch(() => undefined);
  }
  switch (outcome.outcome) {
    case "sent":
      return reply && reply.details.ok === true
        ? { ...reply, details: { ...reply.details, draft_id: outcome.draft.draft_id } }
        : answer(`Dispatched ${outcome.dispatchId} from ${outcome.draft.draft_id}.`, {
            dispatch_id: outcome.dispatchId,
            draft_id: outcome.draft.draft_id,
          });
    case "already-sent":
      return answer(
        `${outcome.draft.draft_id} was already sent as ${outcome.dispatchId}; nothing was sent again. Its report comes to the session that sent it.`,
        { dispatch_id: outcome.dispatchId, draft_id: outcome.draft.draft_id, already_sent: true },
      );
    case "refused":
      return failure(`${outcome.draft.draft_id} was not sent: ${outcome.reason}`, {
        draft_id: outcome.draft.draft_id,
      });
    case "unknown":
      return failure(`Nothing was sent: ${outcome.reason}. Call gstack_brief for a new draft.`);
  }
}
