import { readFile } from "node:fs/promises";
import { dispatchIdSchema } from "@gstack/contracts";
import { z } from "zod";
import { parseToolInput } from "./dispatch-tool";
import type { PluginSettings } from "./plugin-settings";
import { answer, failure, type ToolAnswer } from "./tool-answer";

export const reportParameters = {
  type: "object",
  additionalProperties: false,
  required: ["dispatch_id"],
  properties: { dispatch_id: { type: "string", description: "The dispatch whose report to read." } },
} as const;

const inputSchema = z.strictObject({ dispatch_id: dispatchIdSchema });

/** The whole Markdown completion report of a finished dispatch. */
export async function runReportTool(settings: PluginSettings, params: unknown): Promise<ToolAnswer> {
  const input = parseToolInput(inputSchema, params, "gstack_report");
  if (!input.ok) return failure(input.sentence);
  const id = input.value.dispatch_id;
  try {
    const report = await readFile(settings.layout.dispatch.completedReport(id), "utf8");
    return answer(report, { dispatch_id: id });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    return failure(
      `${id} has no report yet: it is still queued or running, or the id is wrong (see gstack_status).`,
    );
  }
}
