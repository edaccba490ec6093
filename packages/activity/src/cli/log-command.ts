import { readFile } from "node:fs/promises";
import { parseJsonLines } from "@gstack/contracts";
import { defineCommand } from "citty";
import { formatDuration, parseDuration } from "../duration-text";
import { assertKnownFlags, commonArgs, openLog, optionalText, print, UsageError } from "./cli-support";
import { commandMeta } from "./command-meta";

const args = {
  ...commonArgs,
  project: { type: "string", description: "Project slug (required without --input)", valueHint: "slug" },
  skill: {
    type: "string",
    description: "Skill or kind of work, e.g. ship (required without --input)",
    valueHint: "name",
  },
  duration: {
    type: "string",
    description: "Time spent: seconds (312) or units (1h5m) (required without --input)",
    valueHint: "time",
  },
  input: {
    type: "string",
    description: "Append the entries of a JSON Lines file instead (- for stdin), all or none",
    valueHint: "file",
  },
  ts: {
    type: "string",
    description: "When it finished, ISO 8601 with a zone (default: now)",
    valueHint: "timestamp",
  },
  artifacts: {
    type: "string",
    description: "What it produced, comma-separated: pr:47,commit:abc1234",
    valueHint: "list",
  },
  branch: { type: "string", description: "Git branch", valueHint: "name" },
  outcome: { type: "string", description: "e.g. success or failed", valueHint: "word" },
  session: { type: "string", description: "Session id", valueHint: "id" },
  dispatch: { type: "string", description: "Who dispatched it, e.g. wintermute", valueHint: "name" },
  "dispatch-id": { type: "string", description: "The dispatch id", valueHint: "id" },
  source: {
    type: "enum",
    options: ["manual", "daemon", "openclaw", "timeline"] as string[],
    description: "Which writer records it",
    default: "manual",
  },
  backfill: {
    type: "boolean",
    description: "Allow a timestamp in a closed week (skips work already recorded)",
    default: false,
  },
} as const;

export default defineCommand({
  meta: commandMeta.log,
  args,
  async run({ args: values, rawArgs }) {
    assertKnownFlags(rawArgs, args);
    const input = optionalText(values, "input");
    const entries = input !== undefined ? await readInput(input, values) : [entryFromFlags(values)];
    const result = await openLog(values).append(entries, { backfill: values.backfill === true });
    print(values, result, () => {
      if (input !== undefined) {
        return `Logged ${result.added.length} entries${result.skipped > 0 ? ` (${result.skipped} already recorded)` : ""} in ${result.weeks.join(", ") || "no week"}.`;
      }
      const [entry] = entries as [Record<string, unknown>];
      return result.added.length === 0
        ? `Already recorded: ${entry.skill} on ${entry.project} at ${entry.ts}.`
        : `Logged ${entry.skill} on ${entry.project} (${formatDuration(entry.duration as number)}) in ${result.weeks[0]}.`;
    });
  },
});

function entryFromFlags(values: Record<string, unknown>): Record<string, unknown> {
  for (const name of ["project", "skill", "duration"]) {
    if (optionalText(values, name) === undefined)
      throw new UsageError(`Missing required argument: --${name}`);
  }
  const entry: Record<string, unknown> = {
    ts: optionalText(values, "ts") ?? new Date().toISOString(),
    project: values.project,
    skill: values.skill,
    duration: parseDuration(String(values.duration)),
    source: values.source,
  };
  const artifacts = optionalText(values, "artifacts");
  if (artifacts !== undefined) {
    entry.artifacts = artifacts
      .split(",")
      .map((artifact) => artifact.trim())
      .filter(Boolean);
  }
  for (const [flag, field] of [
    ["branch", "branch"],
    ["outcome", "outcome"],
    ["session", "session"],
    ["dispatch", "dispatch"],
    ["dispatch-id", "dispatch_id"],
  ] as const) {
    const value = optionalText(values, flag);
    if (value !== undefined) entry[field] = value;
  }
  return entry;
}

/** Reads entries from a JSON Lines file or stdin; any bad line refuses the whole batch. */
async function readInput(input: string, values: Record<string, unknown>): Promise<unknown[]> {
  for (const name of [
    "project",
    "skill",
    "duration",
    "ts",
    "artifacts",
    "branch",
    "outcome",
    "session",
    "dispatch",
    "dispatch-id",
  ]) {
    if (values[name] !== undefined) throw new UsageError(`--input cannot be combined with --${name}`);
  }
  const source = input === "-" ? "<stdin>" : input;
  const text = input === "-" ? await readStdin() : await readFile(input, "utf8");
  const { entries, problems } = parseJsonLines("activity-entry", text, { source });
  if (problems.length > 0) throw problems[0]!.error;
  return entries.map((item) => item.value);
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}
