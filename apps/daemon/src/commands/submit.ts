import { readFile } from "node:fs/promises";
import { type DispatchInput, parseValue, prepareDispatch } from "@gstack/contracts";
import { defineCommand } from "citty";
import { DaemonError } from "../errors";
import { apiRequest } from "../service-api/client";
import { reachDaemonApi } from "../service-api/local-api";
import { submitDispatch } from "../submit";
import { readDispatchSecret } from "../token";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, refusalLine, rootArg } from "./common";

export const submit = defineCommand({
  meta: commandMeta.submit,
  args: { ...rootArg, file: { type: "positional", description: "dispatch JSON file", required: true } },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      const text = await readFile(args.file, "utf8");
      let document: Record<string, unknown>;
      try {
        document = JSON.parse(text) as Record<string, unknown>;
      } catch (error) {
        throw new DaemonError(`${args.file} is not valid JSON: ${(error as Error).message}`);
      }
      const secret = await readDispatchSecret(layout);
      const signedNote = secret ? " (signed)" : "";
      const api = await reachDaemonApi(layout);
      if (!api) {
        const { path, dispatch } = await submitDispatch(layout, document, secret ? { secret } : {});
        process.stdout.write(`submitted ${dispatch.id}${signedNote} → ${path}\n`);
        return;
      }
      const signed = prepareDispatch(document as DispatchInput, secret ? { secret } : {});
      const dispatch = parseValue("dispatch", signed, { source: args.file });
      const answer = await apiRequest(api, "POST", "/v1/sessions", {
        body: JSON.stringify({ dispatch: JSON.stringify(signed) }),
      });
      if (answer.status !== 202)
        throw new DaemonError(`${dispatch.id} refused: ${refusalLine(answer.body, answer.status)}`);
      const taken = parseValue("spawn-answer", answer.body, { source: "the service API" });
      process.stdout.write(
        `submitted ${taken.dispatch_id}${signedNote} → queued at position ${taken.position} (service API)\n`,
      );
    } catch (error) {
      fail(error);
    }
  },
});
