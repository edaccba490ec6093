import { type AnswerAnswer, dispatchIdSchema } from "@gstack/contracts";
import { apiRequest, reachDaemonApi } from "@gstack/daemon-client";
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

/** The `gstack-dispatch answer` line that gives the same answer on the daemon's host. */
export function cliAnswer(request: z.output<typeof inputSchema>): string {
  const quoted = (text: string) => `'${text.replaceAll("'", `'\\''`)}'`;
  const words =
    request.answer === "approve"
      ? "approve"
      : request.answer === "reply"
        ? quoted(request.text ?? "<reply>")
        : `${request.answer} ${quoted(request.text ?? (request.answer === "revise" ? "<what to change>" : "<why>"))}`;
  return `gstack-dispatch answer ${request.dispatch_id} ${words}${request.round !== undefined ? ` --round ${request.round}` : ""}`;
}

/** Passes the person's answer to the running daemon's service API, which checks it and acts once. */
export async function runAnswerTool(settings: PluginSettings, params: unknown): Promise<ToolAnswer> {
  const input = parseToolInput(inputSchema, params, "gstack_answer");
  if (!input.ok) return failure(input.sentence);
  const request = input.value;
  const api = await reachDaemonApi(settings.layout).catch(() => undefined);
  if (!api) {
    return failure(
      `Nothing was sent: no gstack daemon answers on this host (its service API, ${settings.layout.dispatch.apiSocket}, is not there), and gstack_answer reaches only a daemon on this host. If the daemon runs on another machine, the person answers on that machine: ${cliAnswer(request)}. If it runs here, ask the person to start it (gstack-dispatch run, or the installed service), then answer again.`,
      { dispatch_id: request.dispatch_id, rule: "no_daemon_here" },
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
