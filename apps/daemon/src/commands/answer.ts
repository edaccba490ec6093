import { parseValue } from "@gstack/contracts";
import { apiRequest, DaemonError, reachDaemonApi } from "@gstack/daemon-client";
import { defineCommand } from "citty";
import { parseAnswerWords } from "../await/answer";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, refusalLine, rootArg } from "./common";

export const answer = defineCommand({
  meta: commandMeta.answer,
  args: {
    ...rootArg,
    id: { type: "positional", description: "dispatch id", required: true },
    round: { type: "string", description: "the plan round you answer; refused when a newer one waits" },
  },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      layout.dispatch.claimedFile(args.id);
      // The words after the id: approve | revise <feedback> | reject <reason>, or a gate reply
      // (checked by the daemon against its gate). Checked here first, so words that cannot be an
      // answer never reach the daemon.
      const words = (args._ as string[]).slice(1);
      const input = parseAnswerWords(args.id, words);
      let round: number | undefined;
      if (args.round !== undefined) {
        round = Number(args.round);
        if (!Number.isInteger(round) || round < 1) {
          throw new DaemonError(`--round must be a whole number from 1, got "${args.round}"`);
        }
      }
      const api = await reachDaemonApi(layout);
      if (!api) {
        throw new DaemonError(
          `the daemon is not running; start it (gstack-dispatch run, or the installed service) and answer again`,
        );
      }
      const response = await apiRequest(api, "POST", "/v1/answer", {
        body: JSON.stringify({
          dispatch_id: args.id,
          answer: input.kind,
          ...(input.kind === "revise" ? { text: input.feedback } : {}),
          ...(input.kind === "reject" ? { text: input.reason } : {}),
          ...(input.kind === "reply" ? { text: input.reply } : {}),
          ...(round !== undefined ? { round } : {}),
        }),
      });
      if (response.status !== 200) throw new DaemonError(refusalLine(response.body, response.status));
      const done = parseValue("answer-answer", response.body, { source: "the service API" });
      process.stdout.write(`${args.id}: ${done.message}\n`);
    } catch (error) {
      fail(error);
    }
  },
});
