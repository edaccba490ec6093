import { readFile } from "node:fs/promises";
import { dispatchIdSchema, parseYaml } from "@gstack/contracts";
import { z } from "zod";
import { completionFacts, stripFrontmatter } from "./completion-message";
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

/** The whole completion report of a finished dispatch, rendered for a person to read. */
export async function runReportTool(settings: PluginSettings, params: unknown): Promise<ToolAnswer> {
  const input = parseToolInput(inputSchema, params, "gstack_report");
  if (!input.ok) return failure(input.sentence);
  const id = input.value.dispatch_id;
  try {
    const report = await readFile(settings.layout.dispatch.completedReport(id), "utf8");
    return answer(renderReport(report, settings.layout.dispatch.completedReport(id)), { dispatch_id: id });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    return failure(
      `${id} has no report yet: it is still queued or running, or the id is wrong (see gstack_status).`,
    );
  }
}

/**
 * The report as a person reads it: its frontmatter (the completion's fields as YAML) turned
 * into a few plain lines (status, project, branch, PR, commits, time and cost, error), then
 * the report's own Markdown. A frontmatter that does not parse is left out, not shown raw.
 */
export function renderReport(markdown: string, source: string): string {
  const body = stripFrontmatter(markdown).trim();
  const frontmatter = markdown.slice(0, markdown.length - stripFrontmatter(markdown).length);
  const yamlText = frontmatter.replace(/^---\r?\n/, "").replace(/\r?\n---\r?\n?$/, "");
  const head: string[] = [];
  if (yamlText.trim()) {
    try {
      const completion = parseYaml("completion", yamlText, { source });
      head.push(
        `Status: ${completion.status}${completion.project ? ` (${completion.project})` : ""}`,
        ...completionFacts(completion),
      );
      if (completion.error) head.push(`Error (${completion.error_kind ?? "unknown"}): ${completion.error}`);
    } catch {
      // The body still reads well on its own.
    }
  }
  return head.length > 0 ? `${head.join("\n")}\n\n${body}` : body;
}
