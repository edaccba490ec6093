import { stat } from "node:fs/promises";
import { dispatchIdSchema } from "@gstack/contracts";
import { apiRequest, reachDaemonApi, requestCancel } from "@gstack/daemon-client";
import { z } from "zod";
import { parseToolInput } from "./dispatch-tool";
import type { PluginSettings } from "./plugin-settings";
import { answer, failure, type ToolAnswer } from "./tool-answer";

export const cancelParameters = {
  type: "object",
  additionalProperties: false,
  required: ["dispatch_id"],
  properties: {
    dispatch_id: { type: "string", description: "The dispatch to cancel (dispatch-…)." },
    reason: { type: "string", description: "Why, for the report." },
  },
} as const;

const inputSchema = z.strictObject({ dispatch_id: dispatchIdSchema, reason: z.string().min(1).optional() });

/**
 * Asks the daemon to cancel a queued or running dispatch: through its service API while it runs,
 * else with a control file it acts on when it starts.
 */
export async function runCancelTool(settings: PluginSettings, params: unknown): Promise<ToolAnswer> {
  const input = parseToolInput(inputSchema, params, "gstack_cancel");
  if (!input.ok) return failure(input.sentence);
  const { layout } = settings;
  const id = input.value.dispatch_id;
  const reason = input.value.reason ?? "cancelled from OpenClaw";
  const api = await reachDaemonApi(layout).catch(() => undefined);
  if (api) {
    // The running daemon decides, and says what the cancel did.
    const response = await apiRequest(api, "POST", "/v1/cancel", {
      body: JSON.stringify({ dispatch_id: id, reason }),
    });
    const body = response.body as { outcome?: string; status?: string; message?: string };
    if (response.status === 404) {
      return failure(`No dispatch ${id} is queued or running; check the id with gstack_status.`);
    }
    if (response.status !== 200) {
      return failure(
        `The cancel was not sent: ${body.message ?? `the daemon answered HTTP ${response.status}`}.`,
      );
    }
    if (body.outcome === "finished") {
      return failure(
        `${id} has already ended (${body.status ?? "finished"}); read its report with gstack_report instead.`,
      );
    }
    return answer(`Asked the daemon to cancel ${id}; its cancelled report will arrive in this session.`, {
      dispatch_id: id,
      outcome: body.outcome ?? "cancelling",
    });
  }
  if (await exists(layout.dispatch.completedJson(id))) {
    return failure(`${id} has already ended; read its report with gstack_report instead.`);
  }
  const known =
    (await exists(layout.dispatch.sessionDir(id))) ||
    (await exists(layout.dispatch.claimedFile(id))) ||
    (await exists(`${layout.dispatch.incoming}/${id}.json`));
  if (!known) return failure(`No dispatch ${id} is queued or running; check the id with gstack_status.`);
  await requestCancel(layout, id, reason);
  return answer(`Asked the daemon to cancel ${id}; its cancelled report will arrive in this session.`, {
    dispatch_id: id,
  });
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
