import { createActivityLog, formatShipReport } from "@gstack/activity";
import { z } from "zod";
import { parseToolInput } from "./dispatch-tool";
import type { PluginSettings } from "./plugin-settings";
import { answer, failure, type ToolAnswer } from "./tool-answer";

export const shippedParameters = {
  type: "object",
  additionalProperties: false,
  properties: {
    weeks: { type: "integer", minimum: 1, maximum: 52, description: "How many recent weeks (default 1)." },
    project: { type: "string", description: "Only this gstack project." },
  },
} as const;

const inputSchema = z.strictObject({
  weeks: z.int().min(1).max(52).optional(),
  project: z.string().min(1).optional(),
});

/** "What did I ship": the activity log summarised over recent weeks. */
export async function runShippedTool(settings: PluginSettings, params: unknown): Promise<ToolAnswer> {
  const input = parseToolInput(inputSchema, params, "gstack_shipped");
  if (!input.ok) return failure(input.sentence);
  const weeks = input.value.weeks ?? 1;
  const log = createActivityLog({ root: settings.gstackHome });
  const { summary } = await log.summarize({
    weeks,
    ...(input.value.project ? { project: input.value.project } : {}),
  });
  const title = weeks === 1 ? "this week" : `the last ${weeks} weeks`;
  return answer(formatShipReport(summary, title), { weeks });
}
