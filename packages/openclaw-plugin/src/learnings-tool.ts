import { searchLearnings } from "@gstack/learnings";
import { z } from "zod";
import { parseToolInput } from "./dispatch-tool";
import type { PluginSettings } from "./plugin-settings";
import { answer, failure, type ToolAnswer } from "./tool-answer";

export const learningsParameters = {
  type: "object",
  additionalProperties: false,
  required: ["project"],
  properties: {
    project: { type: "string", description: "The gstack project the question is about." },
    query: { type: "string", description: "Words to look for." },
    limit: { type: "integer", minimum: 1, maximum: 50, description: "At most this many (default 10)." },
  },
} as const;

const inputSchema = z.strictObject({
  project: z.string().min(1),
  query: z.string().optional(),
  limit: z.int().min(1).max(50).optional(),
});

/** Searches gstack's learnings (and the OpenClaw workspace memory), each with where it came from. */
export async function runLearningsTool(
  settings: PluginSettings,
  workspace: string | undefined,
  params: unknown,
): Promise<ToolAnswer> {
  const input = parseToolInput(inputSchema, params, "gstack_learnings");
  if (!input.ok) return failure(input.sentence);
  const outcome = await searchLearnings({
    root: settings.gstackHome,
    workspace: workspace ?? null,
    project: input.value.project,
    ...(input.value.query ? { query: input.value.query } : {}),
    limit: input.value.limit ?? 10,
  });
  const withheld =
    outcome.withheld.length > 0
      ? `${outcome.withheld.length} match(es) withheld as possible prompt injection.`
      : undefined;
  if (outcome.results.length === 0) {
    // Say that matches were withheld even when nothing is shown, so the model does not
    // conclude that nothing was ever learnt about it.
    const none = `No learnings found for ${input.value.project}.`;
    return answer(withheld ? `${none} ${withheld}` : none, {
      results: [],
      withheld: outcome.withheld.length,
    });
  }
  const lines = outcome.results.map(
    (result) =>
      `- ${result.text} (${result.side}${result.type ? ` ${result.type}` : ""}, ${result.file}:${result.line}${result.crossProject ? `, from project ${result.project}` : ""})`,
  );
  if (withheld) lines.push(withheld);
  return answer(lines.join("\n"), { results: outcome.results.length, withheld: outcome.withheld.length });
}
