import { randomBytes } from "node:crypto";
import {
  ContractError,
  checkValue,
  type DispatchInput,
  type GstackLayout,
  prepareDispatch,
  type ReplyTo,
  targetAgentPattern,
  writeDispatchFile,
} from "@gstack/contracts";
import { apiRequest, checkProjectDir, reachDaemonApi, readStatus } from "@gstack/daemon-client";
import { z } from "zod";
import { readDispatchSettings, readSecretFile } from "./gstack-settings";
import type { PluginSettings } from "./plugin-settings";
import { sentDispatches } from "./sent-dispatches";
import { answer, failure, oneLine, type ToolAnswer } from "./tool-answer";
import type { ToolSession } from "./tool-session";

/** The dispatch tool's parameters, as the model sees them. */
export const dispatchParameters = {
  type: "object",
  additionalProperties: false,
  required: ["task", "project", "project_dir"],
  properties: {
    task: { type: "string", description: "What the coding agent should do, in full sentences." },
    project: { type: "string", description: "gstack project slug, e.g. 'acme-widget'." },
    project_dir: {
      type: "string",
      description: "The repository folder the agent works in (must be trusted).",
    },
    constraints: {
      type: "array",
      items: { type: "string" },
      description: "Requirements the work must respect.",
    },
    learnings: { type: "array", items: { type: "string" }, description: "Memories relevant to the task." },
    branch: { type: "string", description: "Branch the work should happen on." },
    task_type: { type: "string", description: "Kind of work, e.g. 'security' or 'shipping'." },
    files: { type: "array", items: { type: "string" }, description: "Paths the task is expected to touch." },
    handoff_id: { type: "string", description: "The handoff this dispatch continues." },
    target_agent: {
      type: "string",
      pattern: targetAgentPattern.source,
      description:
        "Which coding agent runs it: claude (the default), codex, or another agent the daemon's config names (such as claude-acp).",
    },
    ttl_seconds: {
      type: "integer",
      minimum: 60,
      maximum: 86400,
      description: "Expire if not started in time.",
    },
    mode: {
      type: "string",
      enum: ["execute", "plan"],
      description:
        "plan: the agent plans read-only first and the dispatch waits for the person's answer (see gstack_answer); execute (default) runs at once unless the repository must be planned first.",
    },
  },
} as const;

const inputSchema = z.strictObject({
  task: z.string().min(1),
  project: z.string().min(1),
  project_dir: z.string().min(1),
  constraints: z.array(z.string()).optional(),
  learnings: z.array(z.string()).optional(),
  branch: z.string().min(1).optional(),
  task_type: z.string().min(1).optional(),
  files: z.array(z.string()).optional(),
  handoff_id: z.string().min(1).optional(),
  target_agent: z.string().regex(targetAgentPattern).optional(),
  ttl_seconds: z.int().min(60).max(86_400).optional(),
  mode: z.enum(["execute", "plan"]).optional(),
});

/** A new dispatch id: time first, so ids sort by when they were made. */
export function newDispatchId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace(/\..*$/, "");
  return `dispatch-${stamp}-${randomBytes(4).toString("hex")}`;
}

/** Turns tool parameters into a sentence naming the first bad field, or the parsed input. */
export function parseToolInput<T>(
  schema: z.ZodType<T>,
  params: unknown,
  tool: string,
): { ok: true; value: T } | { ok: false; sentence: string } {
  const parsed = schema.safeParse(params ?? {});
  if (parsed.success) return { ok: true, value: parsed.data };
  const issue = parsed.error.issues[0];
  const field = issue?.path.join(".") || "parameters";
  const extra = issue?.code === "unrecognized_keys" ? ` (${issue.keys.join(", ")})` : "";
  return {
    ok: false,
    sentence: `${tool} was not run: ${field}${extra} ${issue?.message.toLowerCase() ?? "is invalid"}; fix the parameters and call it again.`,
  };
}

/**
 * Validates, signs (when `.dispatch-secret` exists) and writes a dispatch file for the
 * daemon, recording the calling session in `reply_to` so the completion comes back to it.
 */
export async function runDispatchTool(
  settings: PluginSettings,
  session: ToolSession,
  params: unknown,
  now = new Date(),
): Promise<ToolAnswer> {
  const input = parseToolInput(inputSchema, params, "gstack_dispatch");
  if (!input.ok) return failure(input.sentence);
  return sendDispatch(settings, session, input.value, now);
}

/** What a dispatch is sent with: the tool's fields, and what a kept draft adds to them. */
export type DispatchFields = z.output<typeof inputSchema> & {
  /** The id, when chosen before (a draft's); a new one otherwise. */
  id?: string;
  base?: string;
  budget_usd?: number;
};

/**
 * Sends one dispatch the ordinary way: the folder checked against `trusted_repos`, the calling
 * session recorded in `reply_to`, signed when a secret exists, handed to the daemon's service
 * API while it runs and written as a file otherwise.
 */
export async function sendDispatch(
  settings: PluginSettings,
  session: ToolSession,
  fields: DispatchFields,
  now = new Date(),
): Promise<ToolAnswer> {
  const input = { value: fields };
  const { layout } = settings;
  try {
    const dispatchSettings = await readDispatchSettings(layout);
    const folder = await checkProjectDir(input.value.project_dir, dispatchSettings.trusted_repos);
    if (!folder.ok) {
      return failure(
        `The dispatch was not sent: ${folder.refusal.reason}. Ask the user to add the repository to trusted_repos in ${layout.config}, or choose a trusted folder.`,
        { rule: folder.refusal.rule },
      );
    }
    const replyTo = replyToOf(session);
    const document: DispatchInput = {
      ...input.value,
      id: input.value.id ?? newDispatchId(now),
      dispatched_by: settings.dispatchedBy,
      ...(replyTo ? { reply_to: replyTo } : {}),
    };
    const checked = checkValue("dispatch", document, { source: "gstack_dispatch" });
    if (!checked.ok) return failure(sentenceOf(checked.error));
    const secret = await readSecretFile(layout.dispatchSecret);
    if (replyTo) {
      await sentDispatches(settings.stateDir).remember({
        id: document.id as string,
        reply_to: replyTo,
        task: input.value.task,
        project: input.value.project,
        sent_at: now.toISOString(),
      });
    }
    const deliveryNote = replyTo
      ? "Its completion report will be posted into this session by itself when it ends; do not poll."
      : "No session was known for this call, so check its progress with gstack_status.";
    // While the daemon runs, its service API takes the dispatch: the same checks as every other
    // caller, and a refusal comes back now instead of as a file in rejected/.
    const spawned = await spawnThroughApi(
      layout,
      prepareDispatch(document, { ...(secret ? { secret } : {}), now }),
    );
    if (spawned?.ok === false) return failure(spawned.sentence, spawned.details);
    if (spawned?.ok) {
      return answer(
        `Dispatched ${spawned.id} (${input.value.project}); the daemon took it, queued at position ${spawned.position}. ${deliveryNote}`,
        {
          dispatch_id: spawned.id,
          position: spawned.position,
          via: "service-api",
          signed: secret !== undefined,
          daemon_running: true,
          reply_to: replyTo ?? null,
        },
      );
    }
    const written = await writeDispatchFile(layout, document, { ...(secret ? { secret } : {}), now });
    const status = await readStatus(layout, now).catch(() => undefined);
    const daemonNote = status?.alive
      ? "The daemon is running and will pick it up."
      : "The dispatch daemon is not running, so it will wait in the queue: ask the user to start it with `gstack-dispatch run`.";
    return answer(`Dispatched ${written.id} (${input.value.project}). ${daemonNote} ${deliveryNote}`, {
      dispatch_id: written.id,
      path: written.path,
      via: "file",
      signed: secret !== undefined,
      daemon_running: status?.alive ?? false,
      reply_to: replyTo ?? null,
    });
  } catch (error) {
    if (ContractError.isInstance(error)) return failure(sentenceOf(error));
    return failure(`The dispatch was not sent: ${oneLine(error)}.`);
  }
}

/** What to tell the agent for each refusal the daemon can give a dispatch. */
const REFUSAL_ADVICE: Record<string, string> = {
  untrusted_repo: "Ask the user to add the repository to trusted_repos, or choose a trusted folder.",
  project_not_found: "Check project_dir: it must be an existing folder on the user's machine.",
  unknown_agent: "Choose an agent the daemon has installed, or leave target_agent out.",
  bad_signature:
    "The dispatch secret does not match the daemon's; ask the user to check ~/.gstack/.dispatch-secret.",
  queue_full: "The daemon's queue is full; try again later.",
  daemon_stopping: "The daemon is stopping; try again once it has restarted.",
};

/**
 * Hands a prepared dispatch to the running daemon's service API. Undefined when no daemon
 * answers (the caller writes the file instead); otherwise taken, or refused with a sentence.
 */
async function spawnThroughApi(
  layout: GstackLayout,
  document: Record<string, unknown>,
): Promise<
  | { ok: true; id: string; position: number }
  | { ok: false; sentence: string; details: Record<string, unknown> }
  | undefined
> {
  const api = await reachDaemonApi(layout).catch(() => undefined);
  if (!api) return undefined;
  const response = await apiRequest(api, "POST", "/v1/sessions", {
    body: JSON.stringify({ dispatch: JSON.stringify(document) }),
  });
  const body = response.body as {
    dispatch_id?: string;
    position?: number;
    error?: string;
    message?: string;
    rule?: string;
    retry_after_seconds?: number;
  };
  if (response.status === 202 && body.dispatch_id && body.position) {
    return { ok: true, id: body.dispatch_id, position: body.position };
  }
  const code = body.error ?? `http_${response.status}`;
  const advice = REFUSAL_ADVICE[code] ?? "Fix the dispatch before sending it again; do not resend it as is.";
  return {
    ok: false,
    sentence: `The dispatch was not sent: ${body.message ?? `the daemon answered HTTP ${response.status}`} (${code}). ${advice}`,
    details: {
      code,
      ...(body.rule ? { rule: body.rule } : {}),
      ...(body.retry_after_seconds !== undefined ? { retry_after_seconds: body.retry_after_seconds } : {}),
    },
  };
}

function sentenceOf(error: ContractError): string {
  const issue = error.issues[0];
  return `The dispatch was not sent: ${issue ? `${issue.path || "the document"} ${issue.message}` : oneLine(error)}; fix it and call gstack_dispatch again.`;
}

/** Where a dispatch's report goes back to: the OpenClaw session that called the tool, if known. */
export function replyToOf(session: ToolSession): ReplyTo | undefined {
  return session.sessionKey
    ? {
        runtime: "openclaw",
        session_key: session.sessionKey,
        ...(session.agentId ? { agent_id: session.agentId } : {}),
        ...(session.sessionId ? { session_id: session.sessionId } : {}),
      }
    : undefined;
}
