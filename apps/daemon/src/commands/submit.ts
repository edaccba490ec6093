import { readFile } from "node:fs/promises";
import { type DispatchInput, parseValue, prepareDispatch } from "@gstack/contracts";
import { defineCommand } from "citty";
import { DaemonError } from "../errors";
import { budgetFromFlag, dispatchFromFlags } from "../intake/dispatch-from-flags";
import { apiRequest } from "../service-api/client";
import { reachDaemonApi } from "../service-api/local-api";
import { submitDispatch } from "../submit";
import { readDispatchSecret } from "../token";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, refusalLine, rootArg } from "./common";

export const submit = defineCommand({
  meta: commandMeta.submit,
  args: {
    ...rootArg,
    file: {
      type: "positional",
      description: "dispatch JSON file (or describe it with --task)",
      required: false,
    },
    task: { type: "string", description: "what the agent should do (instead of a file)" },
    "project-dir": { type: "string", description: "the folder the agent works in (default: this folder)" },
    project: { type: "string", description: "gstack project slug (default: from the folder's name)" },
    agent: { type: "string", description: "claude (default), codex, cursor or gemini" },
    branch: { type: "string", description: "branch the work should happen on" },
    "task-type": { type: "string", description: "kind of work, for routing (e.g. security)" },
    ttl: { type: "string", description: "seconds until an unstarted dispatch expires (60 to 86400)" },
    budget: {
      type: "string",
      description: "spend cap in US dollars: the agent is stopped when its cost reaches it",
    },
    print: { type: "boolean", description: "print the dispatch JSON instead of submitting it" },
  },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      const source = args.file ?? "the command line";
      let document: Record<string, unknown>;
      if (args.file && args.task !== undefined) {
        throw new DaemonError("give a dispatch file or --task, not both");
      } else if (args.file) {
        const text = await readFile(args.file, "utf8");
        try {
          document = JSON.parse(text) as Record<string, unknown>;
        } catch (error) {
          throw new DaemonError(`${args.file} is not valid JSON: ${(error as Error).message}`);
        }
      } else if (args.task !== undefined) {
        const ttl = args.ttl === undefined ? undefined : Number(args.ttl);
        if (ttl !== undefined && !Number.isInteger(ttl))
          throw new DaemonError(`--ttl must be whole seconds, got ${args.ttl}`);
        const budget = args.budget === undefined ? undefined : budgetFromFlag(args.budget);
        document = dispatchFromFlags(
          {
            task: args.task,
            ...(args["project-dir"] ? { projectDir: args["project-dir"] } : {}),
            ...(args.project ? { project: args.project } : {}),
            ...(args.agent ? { agent: args.agent } : {}),
            ...(args.branch ? { branch: args.branch } : {}),
            ...(args["task-type"] ? { taskType: args["task-type"] } : {}),
            ...(ttl !== undefined ? { ttlSeconds: ttl } : {}),
            ...(budget !== undefined ? { budgetUsd: budget } : {}),
          },
          { cwd: process.cwd() },
        );
      } else {
        throw new DaemonError(
          "give a dispatch file, or describe the work with --task (see gstack-dispatch submit --help)",
        );
      }
      if (args.print) {
        const dispatch = parseValue("dispatch", document, { source });
        process.stdout.write(`${JSON.stringify(dispatch, null, 2)}\n`);
        return;
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
      const dispatch = parseValue("dispatch", signed, { source });
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
