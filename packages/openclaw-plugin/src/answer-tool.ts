import { type AnswerAnswer, dispatchIdSchema } from "@gstack/contracts";
import { apiRequest, reachDaemonApi } from "@gstack/daemon";
import { z } from "zod";
import { parseToolInput } from "./dispatch-tool";
import type { PluginSettings } from "./plugin-settings";
import { answer, failure, type ToolAnswer } from "./tool-answer";

export const answerParameters = {
  type: "object",
  additionalProperties: false,
  required: ["dispatch_id", "answer"],
  properties: {
    dispatch_id: { type: "string", description: "The dispatch waiting for an answer (dispatch-…)." },
    answer: {
      type: "string",
      enum: ["approve", "revise", "reject", "reply"],
      description:
        "For a plan: approve carries it out, revise plans again with text as the change wanted, reject ends it with text saying why. For a gstack gate: reply, with text in gstack's grammar (all, d3b, all except d3b), or reject.",
    },
    text: {
      type: "string",
      description: "With revise, what to change; with reject, why. The person's own words.",
    },
    round: {
      type: "integer",
      minimum: 1,
      description:
        "The plan round or gate revision the person answered (from the report); an answer to an older one is refused.",
    },
  },
} as const;

const inputSchema = z.strictObject({
  dispatch_id: dispatchIdSchema,
  answer: z.enum(["approve", "revise", "reject", "reply"]),
  text: z.string().max(20_000).optional(),
  round: z.int().min(1).optional(),
});

/** The tool's registration: one entry in the plugin's tool list. */
export function answerTool(settings: PluginSettings) {
  return {
    name: "gstack_answer",
    label: "gstack answer",
    description:
      "Only with the person's own answer: approve, revise (with their change) or reject (with their reason) the plan of a gstack dispatch that waits for one, or reply to its gstack gate (all, d3b, all except d3b). Never answer on their behalf.",
    parameters: answerParameters,
    run: (_session: unknown, params: unknown) => runAnswerTool(settings, params),
  };
}

/** Passes the person's answer to the running daemon's service API, which checks it and acts once. */
export async function runAnswerTool(settings: PluginSettings, params: unknown): Promise<ToolAnswer> {
  const input = parseToolInput(inputSchema, params, "gstack_answer");
  if (!input.ok) return failure(input.sentence);
  const request = input.value;
  const api = await reachDaemonApi(settings.layout).catch(() => undefined);
  if (!api) {
    return failure(
      "Nothing was sent: the gstack daemon is not running. Ask the person to start it (gstack-dispatch run, or the installed service), then answer again.",
      { dispatch_id: request.dispatch_id },
    );
  }
  const response = await apiRequest(api, "POST", "/v1/answer", { body: JSON.stringify(request) });
  const body = response.body as AnswerAnswer & { message?: string; rule?: string };
  if (response.status !== 200) {
    return failure(`Nothing was changed: ${body.message ?? `the daemon answered HTTP ${response.status}`}.`, {
      dispatch_id: request.dispatch_id,
      ...(body.rule ? { rule: body.rule } : {}),
    });
  }
  return answer(`${request.dispatch_id}: ${body.message}.`, { ...body });
}
