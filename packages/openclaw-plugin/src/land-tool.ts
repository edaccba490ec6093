import { dispatchIdSchema, type LandAnswer } from "@gstack/contracts";
import {
  apiRequest,
  discardDispatch,
  LandRefusal,
  landDispatch,
  reachDaemonApi,
} from "@gstack/daemon-client";
import { z } from "zod";
import { parseToolInput } from "./dispatch-tool";
import type { PluginSettings } from "./plugin-settings";
import { answer, failure, oneLine, type ToolAnswer } from "./tool-answer";

export const landParameters = {
  type: "object",
  additionalProperties: false,
  required: ["dispatch_id", "action"],
  properties: {
    dispatch_id: {
      type: "string",
      description: "The finished dispatch whose branch to land or discard (dispatch-…).",
    },
    action: {
      type: "string",
      enum: ["land", "discard"],
      description: "land: bring its branch into its base; discard: throw the work away.",
    },
    pr: { type: "boolean", description: "With land: push the branch and open a pull request instead." },
    force: { type: "boolean", description: "With discard: throw away commits that were never landed." },
  },
} as const;

const inputSchema = z.strictObject({
  dispatch_id: dispatchIdSchema,
  action: z.enum(["land", "discard"]),
  pr: z.boolean().optional(),
  force: z.boolean().optional(),
});

/** The tool's registration: one entry in the plugin's tool list. */
export function landTool(settings: PluginSettings) {
  return {
    name: "gstack_land",
    label: "gstack land",
    description:
      "Only when the person says so: land a finished gstack dispatch's branch into its base (or open a pull request with pr), or discard it. Each dispatch works on a branch of its own; nothing reaches the person's checkout until this is called.",
    parameters: landParameters,
    run: (_session: unknown, params: unknown) => runLandTool(settings, params),
  };
}

/**
 * Lands or discards a dispatch's branch: through the daemon's service API while it runs, else
 * directly on the state root (landing needs no running daemon).
 */
export async function runLandTool(settings: PluginSettings, params: unknown): Promise<ToolAnswer> {
  const input = parseToolInput(inputSchema, params, "gstack_land");
  if (!input.ok) return failure(input.sentence);
  const request = input.value;
  const { layout } = settings;
  const api = await reachDaemonApi(layout).catch(() => undefined);
  let outcome: LandAnswer;
  if (api) {
    const response = await apiRequest(api, "POST", "/v1/land", { body: JSON.stringify(request) });
    const body = response.body as LandAnswer & { message?: string; files?: string[] };
    if (response.status !== 200) {
      return failure(
        `Nothing was changed: ${body.message ?? `the daemon answered HTTP ${response.status}`}.`,
        {
          dispatch_id: request.dispatch_id,
          ...(body.files ? { files: body.files } : {}),
        },
      );
    }
    outcome = body;
  } else {
    try {
      outcome =
        request.action === "discard"
          ? await discardDispatch(layout, request.dispatch_id, { force: request.force === true })
          : await landDispatch(layout, request.dispatch_id, { pr: request.pr === true });
    } catch (error) {
      if (error instanceof LandRefusal) {
        return failure(`Nothing was changed: ${error.message}.`, {
          dispatch_id: request.dispatch_id,
          rule: error.rule,
          ...(error.files.length > 0 ? { files: error.files } : {}),
        });
      }
      return failure(`Could not ${request.action} ${request.dispatch_id}: ${oneLine(error)}.`);
    }
  }
  return answer(`${request.dispatch_id}: ${outcome.message}.`, { ...outcome });
}
