import { handoffToDispatch, listHandoffs, pickUpHandoff, readHandoff } from "@gstack/handoff";
import { z } from "zod";
import { parseToolInput, runDispatchTool } from "./dispatch-tool";
import type { PluginSettings } from "./plugin-settings";
import { answer, failure, oneLine, type ToolAnswer } from "./tool-answer";
import type { ToolSession } from "./tool-session";

export const listHandoffsParameters = {
  type: "object",
  additionalProperties: false,
  properties: {
    project: { type: "string", description: "Only this gstack project." },
    pending: { type: "boolean", description: "Only handoffs nobody has picked up (default true)." },
  },
} as const;

export const resumeHandoffParameters = {
  type: "object",
  additionalProperties: false,
  required: ["handoff"],
  properties: {
    handoff: { type: "string", description: "The handoff id (or checkpoint:project/name) to resume." },
    project_dir: { type: "string", description: "The folder to work in, when the handoff does not say." },
  },
} as const;

const listSchema = z.strictObject({ project: z.string().min(1).optional(), pending: z.boolean().optional() });
const resumeSchema = z.strictObject({
  handoff: z.string().min(1),
  project_dir: z.string().min(1).optional(),
});

/** Handoffs waiting to be picked up (gstack work paused for later). */
export async function runListHandoffsTool(settings: PluginSettings, params: unknown): Promise<ToolAnswer> {
  const input = parseToolInput(listSchema, params, "gstack_handoffs");
  if (!input.ok) return failure(input.sentence);
  const { records } = await listHandoffs(
    {
      ...(input.value.project ? { project: input.value.project } : {}),
      pending: input.value.pending ?? true,
    },
    { root: settings.gstackHome },
  );
  if (records.length === 0) return answer("No handoffs are waiting.", { handoffs: [] });
  const lines = records.map(
    (record) =>
      `- ${record.ref} (${record.handoff.project}${record.handoff.branch ? `, ${record.handoff.branch}` : ""}): ${(record.handoff as { title?: string; summary?: string }).title ?? (record.handoff as { summary?: string }).summary ?? ""}`,
  );
  return answer(lines.join("\n"), { handoffs: records.map((record) => record.ref) });
}

/** Resumes a handoff by dispatching it from this session, and marks it picked up. */
export async function runResumeHandoffTool(
  settings: PluginSettings,
  session: ToolSession,
  params: unknown,
): Promise<ToolAnswer> {
  const input = parseToolInput(resumeSchema, params, "gstack_resume_handoff");
  if (!input.ok) return failure(input.sentence);
  let dispatch: Record<string, unknown>;
  try {
    const record = await readHandoff(input.value.handoff, { root: settings.gstackHome });
    dispatch = handoffToDispatch(
      record,
      input.value.project_dir ? { projectDir: input.value.project_dir } : {},
    ) as Record<string, unknown>;
  } catch (error) {
    return failure(`The handoff was not resumed: ${oneLine(error)}.`);
  }
  const allowed = [
    "task",
    "project",
    "project_dir",
    "constraints",
    "learnings",
    "branch",
    "task_type",
    "files",
    "handoff_id",
  ];
  const params2 = Object.fromEntries(Object.entries(dispatch).filter(([key]) => allowed.includes(key)));
  const sent = await runDispatchTool(settings, session, params2);
  if (sent.details.ok !== true) return sent;
  await pickUpHandoff(
    input.value.handoff,
    { by: settings.dispatchedBy },
    { root: settings.gstackHome },
  ).catch(() => undefined);
  return sent;
}
