import { defineCommand } from "citty";
import { formatDuration, parseDuration } from "../duration-text";
import { assertKnownFlags, commonArgs, openLog, optionalText, print } from "./cli-support";

const args = {
  ...commonArgs,
  project: { type: "string", description: "Project slug", valueHint: "slug", required: true },
  skill: {
    type: "string",
    description: "Skill or kind of work, e.g. ship",
    valueHint: "name",
    required: true,
  },
  duration: {
    type: "string",
    description: "Time spent: seconds (312) or units (1h5m)",
    valueHint: "time",
    required: true,
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
  meta: { name: "log", description: "Record a finished piece of work" },
  args,
  async run({ args: values, rawArgs }) {
    assertKnownFlags(rawArgs, args);
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
    const result = await openLog(values).append([entry], { backfill: values.backfill === true });
    print(values, result, () =>
      result.added.length === 0
        ? `Already recorded: ${entry.skill} on ${entry.project} at ${entry.ts}.`
        : `Logged ${entry.skill} on ${entry.project} (${formatDuration(entry.duration as number)}) in ${result.weeks[0]}.`,
    );
  },
});
