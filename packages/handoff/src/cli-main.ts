import { readFile } from "node:fs/promises";
import { readSecretFile } from "@gstack/contracts";
import { defineCommand } from "citty";
import { commonArgs, printJson, readStdin, rootOf, runAction } from "./cli-support";
import { cliMeta, commandMeta } from "./command-outline";
import { dispatchHandoff } from "./handoff-dispatch";
import { HandoffError } from "./handoff-error";
import { formatHandoff, readHandoffFields } from "./handoff-markdown";
import {
  findLatestHandoff,
  type HandoffRecord,
  listHandoffs,
  type NewHandoff,
  pickUpHandoff,
  readHandoff,
  writeHandoff,
} from "./handoff-store";
import { resumePromptOf } from "./resume-prompt";

const write = defineCommand({
  meta: commandMeta.write,
  args: {
    ...commonArgs,
    file: { type: "string", description: "Handoff Markdown (frontmatter optional) to read; '-' for stdin" },
    id: { type: "string", description: "Id to use (a free one is chosen if taken)" },
    from: { type: "string", description: "Who hands over: 'gstack' or the agent's name" },
    to: { type: "string", description: "Who continues: 'gstack' or the agent's name" },
    project: { type: "string", description: "gstack project slug" },
    branch: { type: "string", description: "Branch the work is on" },
    "project-dir": { type: "string", description: "Folder the work happens in" },
    context: { type: "string", description: "The Context section" },
    state: { type: "string", description: "The State section" },
    need: { type: "string", description: "The What I need section" },
    "resume-prompt": {
      type: "string",
      description: "The exact prompt that resumes the work (at most 4096 characters)",
    },
  },
  run: ({ args }) =>
    runAction(async () => {
      let fields: Record<string, unknown> = {};
      if (args.file !== undefined) {
        const source = args.file === "-" ? "<stdin>" : args.file;
        const text = args.file === "-" ? await readStdin() : await readFile(args.file, "utf8");
        fields = readHandoffFields(text, source, { requireFrontmatter: false });
      }
      const flags: Record<string, string | undefined> = {
        id: args.id,
        from: args.from,
        to: args.to,
        project: args.project,
        branch: args.branch,
        project_dir: args["project-dir"],
        context: args.context,
        state: args.state,
        what_i_need: args.need,
        resume_prompt: args["resume-prompt"],
      };
      for (const [key, value] of Object.entries(flags)) if (value !== undefined) fields[key] = value;
      const record = await writeHandoff(fields as NewHandoff, { root: rootOf(args) });
      if (args.json) printJson(record);
      else process.stdout.write(`wrote ${record.ref} ${record.path}\n`);
    }),
});

function summaryLine(record: HandoffRecord): string {
  const { handoff } = record;
  const about = (handoff.what_i_need ?? handoff.context ?? "").split("\n")[0]!.slice(0, 60);
  return [record.ref, handoff.status, handoff.project, handoff.branch ?? "-", handoff.timestamp, about].join(
    "\t",
  );
}

const list = defineCommand({
  meta: commandMeta.list,
  args: {
    ...commonArgs,
    project: { type: "string", description: "Only this project" },
    branch: { type: "string", description: "Only this branch" },
    pending: { type: "boolean", description: "Only handoffs not yet picked up", default: false },
    checkpoints: {
      type: "boolean",
      description: "Include gstack checkpoints (--no-checkpoints to leave them out)",
      default: true,
    },
  },
  run: ({ args }) =>
    runAction(async () => {
      const result = await listHandoffs(
        {
          ...(args.project ? { project: args.project } : {}),
          ...(args.branch ? { branch: args.branch } : {}),
          pending: args.pending,
          checkpoints: args.checkpoints,
        },
        { root: rootOf(args) },
      );
      if (args.json) {
        printJson(result);
        return;
      }
      for (const problem of result.problems)
        process.stderr.write(`gstack-handoff: skipped ${problem.message}\n`);
      if (result.records.length === 0) process.stderr.write("no handoffs\n");
      for (const record of result.records) process.stdout.write(`${summaryLine(record)}\n`);
    }),
});

const show = defineCommand({
  meta: commandMeta.show,
  args: {
    ...commonArgs,
    ref: { type: "positional", description: "Handoff id or checkpoint reference", required: true },
  },
  run: ({ args }) =>
    runAction(async () => {
      const record = await readHandoff(args.ref, { root: rootOf(args) });
      if (args.json) printJson(record);
      else process.stdout.write(formatHandoff(record.handoff));
    }),
});

const resume = defineCommand({
  meta: commandMeta.resume,
  args: {
    ...commonArgs,
    ref: { type: "positional", description: "Handoff id or checkpoint reference", required: false },
    project: { type: "string", description: "Without an id: the newest pending handoff of this project" },
    branch: { type: "string", description: "With --project: only this branch" },
    dispatch: {
      type: "boolean",
      description: "Write a dispatch file for the daemon and mark the handoff picked up",
      default: false,
    },
    "secret-file": {
      type: "string",
      description: "Sign the dispatch with the secret in this file (mode 0600)",
    },
    "project-dir": { type: "string", description: "Folder to work in when the handoff names none" },
    "dispatched-by": { type: "string", description: "Dispatching agent (default: the handoff's 'to')" },
    "dispatch-id": { type: "string", description: "Dispatch id (default: dispatch-handoff-{id})" },
  },
  run: ({ args }) =>
    runAction(async () => {
      const root = rootOf(args);
      let record: HandoffRecord | undefined;
      if (args.ref) record = await readHandoff(args.ref, { root });
      else if (args.project) {
        record = await findLatestHandoff(
          { project: args.project, ...(args.branch ? { branch: args.branch } : {}), pending: true },
          { root },
        );
        if (!record) {
          throw new HandoffError(
            "not-found",
            `no pending handoff for project ${args.project}${args.branch ? ` on branch ${args.branch}` : ""}`,
          );
        }
      } else {
        throw new HandoffError("invalid-reference", "name a handoff id or pass --project (see --help)");
      }
      if (!args.dispatch) {
        const resumed = resumePromptOf(record.handoff);
        if (args.json) printJson({ ref: record.ref, ...resumed });
        else process.stdout.write(`${resumed.prompt}\n`);
        return;
      }
      const secret = args["secret-file"] ? await readSecretFile(args["secret-file"]) : undefined;
      const result = await dispatchHandoff(record, {
        root,
        ...(secret ? { secret } : {}),
        ...(args["project-dir"] ? { projectDir: args["project-dir"] } : {}),
        ...(args["dispatched-by"] ? { dispatchedBy: args["dispatched-by"] } : {}),
        ...(args["dispatch-id"] ? { id: args["dispatch-id"] } : {}),
      });
      if (args.json)
        printJson({
          ref: result.record.ref,
          dispatch: { id: result.dispatch.id, path: result.dispatch.path },
        });
      else process.stdout.write(`dispatched ${result.dispatch.id} ${result.dispatch.path}\n`);
    }),
});

const pick = defineCommand({
  meta: commandMeta.pick,
  args: {
    ...commonArgs,
    ref: { type: "positional", description: "Handoff id or checkpoint reference", required: true },
    by: { type: "string", description: "Who picks it up (default: the handoff's 'to')" },
  },
  run: ({ args }) =>
    runAction(async () => {
      const root = rootOf(args);
      const by = args.by ?? (await readHandoff(args.ref, { root })).handoff.to;
      const record = await pickUpHandoff(args.ref, { by }, { root });
      if (args.json) printJson(record);
      else process.stdout.write(`picked up ${record.ref} by ${by}\n`);
    }),
});

export const main = defineCommand({
  meta: cliMeta,
  subCommands: { write, list, show, resume, pick },
});
