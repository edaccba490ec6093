import type { z } from "zod";
import { lazySchema } from "../lazy";

/**
 * gstack's unattended-run artifacts, as the unattended contract of the 1.91 line publishes
 * them: the run manifest `run.json` and the rows of `decisions.jsonl`, `findings.jsonl` and
 * `tasks.jsonl` in a run directory. Written from the published facts; like every document
 * here they are open objects, so fields a later gstack adds survive.
 */

/** The statuses of gstack's `GSTACK_RESULT:` line: how an unattended skill ended. */
export const gstackResultStatuses = [
  "complete",
  "gate_pending",
  "incomplete",
  "interrupted",
  "refused",
] as const;
export type GstackResultStatus = (typeof gstackResultStatuses)[number];

export const gstackResultStatusSchema = lazySchema((z) => z.enum(gstackResultStatuses));

/** A run manifest's status: a result status, or one of a run not yet over. */
export const gstackRunStatusSchema = lazySchema((z) =>
  z.enum([...gstackResultStatuses, "awaiting_result", "running"]),
);

export const gstackSeverities = ["Critical", "High", "Medium", "Low", "Informational"] as const;
export type GstackSeverity = (typeof gstackSeverities)[number];

const idText = lazySchema((z) => z.string().min(1));

const voiceOutcomeSchema = lazySchema((z) =>
  z.looseObject({
    status: z.enum(["completed", "unavailable", "disabled", "skipped", "failed", "pending", "running"]),
    model: z.string().optional(),
    provider: z.string().optional(),
    output: z.string().optional().describe("Artifact key of this voice's output."),
  }),
);

/** `run.json`: the manifest of an unattended gstack run (gstack's `run` schema, version 1). */
export const gstackRunManifestSchema = lazySchema((z) =>
  z
    .looseObject({
      schema_version: z.literal(1),
      run: idText.describe("The run id; every row id in the run starts with it and a '-'."),
      status: gstackRunStatusSchema,
      required_phases: z.array(z.string()),
      phases: z
        .record(
          z.string(),
          z.looseObject({
            snapshot: z.string().optional(),
            native: voiceOutcomeSchema.optional(),
            outside: voiceOutcomeSchema.optional(),
          }),
        )
        .describe("Phase id → its snapshot and each reviewer voice's outcome."),
      artifacts: z
        .record(
          z.string(),
          z.looseObject({
            path: z.string().min(1).describe("Relative to the run directory."),
            sha256: z.string().min(1),
          }),
        )
        .describe("Artifact key (e.g. 'decisions.jsonl') → where it is and its hash."),
      counts: z.record(z.string(), z.number()).optional(),
      base: z.string().optional(),
      host: z.string().optional(),
      session_kind: z.string().optional(),
      gate_rev: z.int().optional(),
      gate: z.looseObject({}).optional(),
      consumed_by: z
        .array(z.looseObject({ consumer: z.string(), at: z.string() }))
        .optional()
        .describe("Who read the run, once each: the acknowledgement of consumption."),
      deviations: z.array(z.string()).optional(),
    })
    .describe("gstack's run.json: the manifest of an unattended run."),
);
export type GstackRunManifest = z.output<typeof gstackRunManifestSchema>;

/** One row of a run's `decisions.jsonl` (gstack's `decisions` schema, version 1). */
export const gstackDecisionSchema = lazySchema((z) =>
  z
    .looseObject({
      schema_version: z.literal(1),
      run: z.string(),
      id: idText,
      title: z.string(),
      options: z.array(z.string()),
      recommended: z.string().nullable(),
      kind: z.enum(["auto", "approval", "user_challenge"]),
      status: z.enum(["pending", "approved", "overridden", "rejected"]),
      gate_rev: z.int().min(1),
      label: z.string().optional(),
      phase: z.string().optional(),
      default_if_unanswered: z.string().nullable().optional(),
      chosen: z.string().nullable().optional(),
      answered_at: z.string().optional(),
      reply: z.string().optional(),
      source: z.string().optional(),
      cost: z.string().optional(),
    })
    .describe("A row of gstack's run-level decisions.jsonl."),
);
export type GstackDecision = z.output<typeof gstackDecisionSchema>;

/** One row of a run's `findings.jsonl` (gstack's `findings` schema, version 1). */
export const gstackFindingSchema = lazySchema((z) =>
  z
    .looseObject({
      schema_version: z.literal(1),
      run: z.string(),
      id: idText,
      phase: z.string(),
      voice: z.enum(["native", "outside"]),
      severity: z.enum(gstackSeverities),
      title: z.string(),
      model: z.string().optional(),
      file: z.string().optional(),
      line: z.int().optional(),
      disposition: z
        .enum(["open", "accepted", "partially_accepted", "rejected", "deferred", "fixed"])
        .optional(),
      resolution: z.string().optional(),
      plan_items: z.array(z.string()).optional(),
      native_counterpart: z.string().nullable().optional(),
      source: z.string().optional(),
    })
    .describe("A row of gstack's findings.jsonl."),
);
export type GstackFinding = z.output<typeof gstackFindingSchema>;

/** One row of a run's `tasks.jsonl` (gstack's `tasks` schema, version 2). */
export const gstackTaskSchema = lazySchema((z) =>
  z
    .looseObject({
      schema_version: z.literal(2),
      run: z.string(),
      id: idText,
      title: z.string(),
      status: z.enum([
        "pending",
        "ready",
        "blocked_on_dependency",
        "blocked_on_decision",
        "in_progress",
        "done",
      ]),
      depends_on: z.array(z.string()),
      findings: z.array(z.string()),
      blocked_by: z.array(z.string()),
      acceptance: z.string().describe("The command or check that proves the task."),
      pr: z.string().optional(),
      item: z.string().optional(),
      tier: z.int().optional(),
      priority: z.string().optional(),
      component: z.string().optional(),
      files: z.array(z.string()).optional(),
    })
    .describe("A row of gstack's tasks.jsonl (version 2)."),
);
export type GstackTask = z.output<typeof gstackTaskSchema>;

/**
 * What the daemon read of a gstack run, carried by the completion: gstack's own status, what
 * waits for a person, what matters most. `check` says whether the run directory was checked
 * and found sound; anything else comes with `problems`, and the rest is then absent or partial.
 */
export const gstackRunSummarySchema = lazySchema((z) =>
  z
    .looseObject({
      skill: z.string().min(1).describe("The skill named by the GSTACK_RESULT line."),
      status: gstackResultStatusSchema.describe("gstack's status from the GSTACK_RESULT line."),
      run_dir: z.string().min(1).describe("The run directory as the GSTACK_RESULT line named it."),
      check: z
        .enum(["valid", "invalid", "missing", "outside"])
        .describe(
          "valid: checked and sound; invalid: a schema, hash or path error; missing: no run.json; outside: the run directory is not inside the agent's working directory.",
        ),
      problems: z.array(z.string()).optional().describe("One line per problem found, when not valid."),
      run: z.string().optional().describe("The run id from run.json."),
      decisions_pending: z
        .array(
          z.looseObject({
            id: z.string(),
            title: z.string(),
            options: z.array(z.string()),
            recommended: z.string().nullable(),
          }),
        )
        .optional(),
      findings: z
        .array(
          z.looseObject({
            id: z.string(),
            severity: z.enum(gstackSeverities),
            title: z.string(),
            disposition: z.string().optional(),
          }),
        )
        .optional()
        .describe("Critical and High findings only."),
      tasks: z
        .array(
          z.looseObject({ id: z.string(), title: z.string(), status: z.string(), acceptance: z.string() }),
        )
        .optional(),
      acknowledged: z.boolean().optional().describe("The run's consumed_by names this dispatch."),
    })
    .describe("A gstack unattended run, as the daemon read it."),
);
export type GstackRunSummary = z.output<typeof gstackRunSummarySchema>;

/** A parsed `GSTACK_RESULT: skill=… status=… run=…` line. */
export interface GstackResultLine {
  skill: string;
  status: GstackResultStatus;
  run: string;
}

const RESULT_PREFIX = "GSTACK_RESULT: ";
const RESULT_LINE = /^GSTACK_RESULT: skill=(\S+) status=(\S+) run=(.+)$/;

/** The line an unattended gstack skill ends with. `skill` has no spaces; `run` has no line break. */
export function formatGstackResultLine(line: GstackResultLine): string {
  return `${RESULT_PREFIX}skill=${line.skill} status=${line.status} run=${line.run}`;
}

/**
 * The last `GSTACK_RESULT:` line of `text`, parsed, as a parent reads it (`grep | tail -1`):
 * the last line that starts with the prefix decides, and when that one does not parse (an
 * unknown status, a missing field) the answer is undefined rather than an earlier line.
 */
export function parseGstackResultLine(text: string): GstackResultLine | undefined {
  let last: string | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.startsWith(RESULT_PREFIX)) last = line;
  }
  if (last === undefined) return undefined;
  const match = RESULT_LINE.exec(last);
  if (!match) return undefined;
  const [, skill, status, run] = match;
  if (!skill || !run || !(gstackResultStatuses as readonly string[]).includes(status ?? "")) return undefined;
  const trimmed = run.trimEnd();
  if (trimmed === "") return undefined;
  return { skill, status: status as GstackResultStatus, run: trimmed };
}
