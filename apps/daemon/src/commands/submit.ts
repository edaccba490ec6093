import { readFile } from "node:fs/promises";
import { type DispatchInput, parseValue, prepareDispatch } from "@gstack/contracts";
import { apiRequest, DaemonError, reachDaemonApi, submitDispatch } from "@gstack/daemon-client";
import { defineCommand } from "citty";
import {
  budgetFromFlag,
  type DispatchFlags,
  dispatchFromFlags,
  fieldsFromFlags,
  modeFromFlag,
} from "../intake/dispatch-from-flags";
import { readDispatchSecret } from "../token";
import { commandMeta } from "./command-meta";
import { fail, layoutOf, refusalLine, rootArg } from "./common";

export const submit = defineCommand({
  meta: commandMeta.submit,
  args: {
    ...rootArg,
    file: {
      type: "positional",
      description:
        "dispatch JSON file (or describe it with --task); flags given with it replace the file's fields they name",
      required: false,
    },
    task: { type: "string", description: "what the agent should do" },
    "project-dir": { type: "string", description: "the folder the agent works in (default: this folder)" },
    project: { type: "string", description: "gstack project slug (default: from the folder's name)" },
    agent: {
      type: "string",
      description: "claude (default), codex, cursor, gemini or an agent named under dispatch.agents",
    },
    branch: { type: "string", description: "branch the work should happen on" },
    "task-type": { type: "string", description: "kind of work, for routing (e.g. security)" },
    ttl: { type: "string", description: "seconds until an unstarted dispatch expires (60 to 86400)" },
    budget: {
      type: "string",
      description: "spend cap in US dollars: the agent is stopped when its cost reaches it",
    },
    mode: {
      type: "string",
      description:
        "plan (plan read-only, then wait for `gstack-dispatch answer`) or execute (run at once unless plan_first_repos names the folder)",
    },
    print: { type: "boolean", description: "print the dispatch JSON instead of submitting it" },
  },
  async run({ args }) {
    try {
      const layout = layoutOf(args);
      const flags = flagsOf(args);
      let document: Record<string, unknown>;
      let overridden: string[] = [];
      if (args.file) {
        // Flags given with a file replace the fields they name: a saved dispatch is a template
        // whose task, folder, mode or budget can change per submission without editing it.
        const fromFile = await readDispatchFile(args.file);
        const given = fieldsFromFlags(flags, { cwd: process.cwd() });
        overridden = Object.keys(given);
        document = { ...fromFile, ...given };
        // A signature covers the fields as the file has them; once one changes it is stale.
        if (overridden.length > 0) delete document.source_signature;
      } else if (flags.task !== undefined) {
        document = dispatchFromFlags({ ...flags, task: flags.task }, { cwd: process.cwd() });
      } else {
        throw new DaemonError(
          "give a dispatch file, or describe the work with --task (see gstack-dispatch submit --help)",
        );
      }
      const fromFlags = overridden.length > 0 ? `; ${overridden.join(", ")} from the command line` : "";
      const source = !args.file
        ? "the command line"
        : overridden.length > 0
          ? `${args.file} with the command line's ${overridden.join(", ")}`
          : args.file;
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
        process.stdout.write(`submitted ${dispatch.id}${signedNote} → ${path}${fromFlags}\n`);
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
        `submitted ${taken.dispatch_id}${signedNote} → queued at position ${taken.position} (service API)${fromFlags}\n`,
      );
    } catch (error) {
      fail(error);
    }
  },
});

/** The dispatch fields the command line gives, each flag checked by its own rule first. */
function flagsOf(args: {
  task?: string | undefined;
  "project-dir"?: string | undefined;
  project?: string | undefined;
  agent?: string | undefined;
  branch?: string | undefined;
  "task-type"?: string | undefined;
  ttl?: string | undefined;
  budget?: string | undefined;
  mode?: string | undefined;
}): Partial<DispatchFlags> {
  const ttl = args.ttl === undefined ? undefined : Number(args.ttl);
  if (ttl !== undefined && !Number.isInteger(ttl))
    throw new DaemonError(`--ttl must be whole seconds, got ${JSON.stringify(args.ttl)}`);
  return {
    ...(args.task !== undefined ? { task: args.task } : {}),
    ...(args["project-dir"] !== undefined ? { projectDir: args["project-dir"] } : {}),
    ...(args.project !== undefined ? { project: args.project } : {}),
    ...(args.agent !== undefined ? { agent: args.agent } : {}),
    ...(args.branch !== undefined ? { branch: args.branch } : {}),
    ...(args["task-type"] !== undefined ? { taskType: args["task-type"] } : {}),
    ...(ttl !== undefined ? { ttlSeconds: ttl } : {}),
    ...(args.budget !== undefined ? { budgetUsd: budgetFromFlag(args.budget) } : {}),
    ...(args.mode !== undefined ? { mode: modeFromFlag(args.mode) } : {}),
  };
}

/** A dispatch file's JSON object, or one line naming the file and what is wrong with it. */
async function readDispatchFile(file: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new DaemonError(
      code === "ENOENT" ? `${file}: no such file` : `${file}: cannot be read (${(error as Error).message})`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new DaemonError(`${file} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new DaemonError(`${file}: a dispatch is a JSON object`);
  return value as Record<string, unknown>;
}
