import { readFile } from "node:fs/promises";
import { parseValue } from "@gstack/contracts";
import { apiRequest, DaemonError, dispatchPhase, reachDaemonApi, requestCancel } from "@gstack/daemon-client";
import { defineCommand } from "citty";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, refusalLine, rootArg } from "./common";

export const cancel = defineCommand({
  meta: commandMeta.cancel,
  args: {
    ...rootArg,
    id: { type: "positional", description: "dispatch id", required: true },
    wait: { type: "string", description: "seconds to wait for the report (default 15, 0 to return at once)" },
    reason: { type: "string", description: "why, for the audit log and the report" },
  },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      layout.dispatch.claimedFile(args.id);
      const reason = args.reason ?? "cancelled from the command line";
      const api = await reachDaemonApi(layout);
      if (api) {
        const answer = await apiRequest(api, "POST", "/v1/cancel", {
          body: JSON.stringify({ dispatch_id: args.id, reason }),
        });
        if (answer.status === 404) throw new DaemonError(`no queued or running dispatch ${args.id}`);
        if (answer.status !== 200) throw new DaemonError(refusalLine(answer.body, answer.status));
        const outcome = parseValue("cancel-answer", answer.body, { source: "the service API" });
        if (outcome.outcome === "finished") {
          process.stdout.write(`${args.id}: already ${outcome.status ?? "finished"}; nothing changed\n`);
          return;
        }
      } else {
        // Checked twice: a dispatch being claimed is briefly in neither place.
        let phase = await dispatchPhase(layout, args.id);
        if (phase === undefined) {
          await new Promise((done) => setTimeout(done, 200));
          phase = await dispatchPhase(layout, args.id);
        }
        if (phase === undefined) throw new DaemonError(`no queued or running dispatch ${args.id}`);
        await requestCancel(layout, args.id, reason);
      }
      const waitSeconds = Number(args.wait ?? 15);
      const deadline = Date.now() + waitSeconds * 1000;
      while (Date.now() < deadline) {
        try {
          const completion = JSON.parse(await readFile(layout.dispatch.completedJson(args.id), "utf8")) as {
            status: string;
          };
          process.stdout.write(
            `${args.id}: ${completion.status} → ${layout.dispatch.completedReport(args.id)}\n`,
          );
          return;
        } catch {}
        await new Promise((done) => setTimeout(done, 200));
      }
      process.stdout.write(`cancel requested for ${args.id}\n`);
    } catch (error) {
      fail(error);
    }
  },
});
