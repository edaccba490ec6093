import type { z } from "zod";
import { lazySchema } from "../lazy";
import { dispatchIdSchema, nonEmptyString, targetAgentSchema, timestampSchema } from "./common";

/** `dispatch/.daemon-heartbeat`, rewritten every `heartbeat_seconds` while the daemon runs. */
export const heartbeatSchema = lazySchema((z) =>
  z
    .looseObject({
      ts: timestampSchema,
      active: z.int().min(0),
      queued: z.int().min(0),
      pid: z.int().min(1),
      started_at: timestampSchema.optional(),
      version: z.string().optional(),
      mode: z.enum(["local-only", "clawvisor"]).optional(),
      max_concurrent: z.int().min(1).optional(),
      interval_seconds: z
        .int()
        .min(1)
        .optional()
        .describe(
          "Seconds between heartbeats; a heartbeat older than three intervals means the daemon is gone.",
        ),
      delivery: z
        .looseObject({
          endpoints: z.array(
            z.looseObject({
              url: z.string(),
              kind: z.string(),
              reachable: z.boolean(),
              detail: z.string(),
            }),
          ),
          pending: z.int().min(0),
          failed: z.array(z.looseObject({ dispatch_id: z.string(), url: z.string(), reason: z.string() })),
        })
        .optional()
        .describe("What the completion delivery found at start-up and what it is still sending."),
      api: z
        .looseObject({
          socket: z.string().optional(),
          tcp: z.string().optional(),
          error: z.string().optional(),
        })
        .optional()
        .describe("Where the service API listens, or why it could not."),
      disk_full: z
        .looseObject({ since: timestampSchema, queued: z.int().min(0) })
        .optional()
        .describe(
          "Present while the state root's disk is full: nothing new starts, the queued dispatches wait and start by themselves when there is room.",
        ),
    })
    .describe("Proof of life written by the dispatch daemon."),
);
export type Heartbeat = z.output<typeof heartbeatSchema>;

export const auditEventNameSchema = lazySchema((z) =>
  z.enum([
    "daemon_started",
    "daemon_stopping",
    "daemon_stopped",
    "received",
    "validated",
    "rejected",
    "expired",
    "queued",
    "spawned",
    "progress",
    "retried",
    "completed",
    "failed",
    "cancelled",
    "timeout",
    "recovered",
    "orphan_killed",
    "callback_sent",
    "callback_failed",
    "callback_refused",
    "endpoint_checked",
    "learnings_recorded",
    "activity_recorded",
    "worktree_created",
    "landed",
    "discarded",
    "awaiting",
    "answered",
  ]),
);
export type AuditEventName = z.infer<typeof auditEventNameSchema>;

/** One line of `dispatch/audit.jsonl`. */
export const auditEventSchema = lazySchema((z) =>
  z
    .looseObject({
      ts: timestampSchema,
      event: auditEventNameSchema,
      dispatch_id: z
        .string()
        .optional()
        .describe("Absent for daemon-wide events; may be unsafe text for rejects."),
      pid: z.int().optional(),
      reason: z.string().optional(),
      detail: z.record(z.string(), z.unknown()).optional(),
    })
    .describe("An event in the dispatch audit log."),
);
export type AuditEvent = z.output<typeof auditEventSchema>;

export const sessionStateSchema = lazySchema((z) =>
  z.enum(["queued", "running", "retrying", "awaiting", "finished"]),
);

/** A finished dispatch's worktree waiting for the person's word, as `status --json` lists it. */
const finishedWorktreeSchema = lazySchema((z) =>
  z.looseObject({
    id: dispatchIdSchema,
    project: nonEmptyString,
    branch: nonEmptyString,
    base: nonEmptyString.describe("The branch (or commit) it lands into."),
    age_seconds: z.int().min(0).describe("Seconds since the dispatch finished."),
    disk_bytes: z
      .int()
      .min(0)
      .optional()
      .describe(
        "Bytes in its worktree as measured when it finished (0 once the folder was removed); absent when never measured.",
      ),
    worktree: nonEmptyString.describe("The worktree's folder."),
  }),
);

/** The answer to Clawvisor's `list-sessions` action and the daemon's `status` command. */
export const listSessionsResponseSchema = lazySchema((z) =>
  z
    .looseObject({
      active: z.int().min(0),
      max_concurrent: z.int().min(1),
      queued: z.int().min(0),
      sessions: z.array(
        z.looseObject({
          id: dispatchIdSchema,
          project: nonEmptyString,
          elapsed: z.int().min(0).describe("Seconds since the session was spawned."),
          agent: targetAgentSchema.optional(),
          turns: z.int().min(0).optional(),
          tool_uses: z.int().min(0).optional(),
          commits: z.int().min(0).optional(),
          last_action: z.string().optional(),
          attempt: z.int().min(1).optional(),
          cost_usd: z
            .number()
            .min(0)
            .optional()
            .describe("Spent so far, in US dollars, as the agent reported it."),
          budget_usd: z.number().positive().optional().describe("The dispatch's spend cap, when it has one."),
        }),
      ),
      queue: z
        .array(z.looseObject({ id: dispatchIdSchema, project: nonEmptyString, waiting: z.int().min(0) }))
        .optional()
        .describe("Queued dispatches in the order they will start."),
      awaiting: z
        .array(
          z.looseObject({
            id: dispatchIdSchema,
            project: nonEmptyString,
            kind: z.enum(["plan", "gate"]),
            waiting: z.int().min(0).describe("Seconds since it began to wait."),
            expires_at: timestampSchema,
          }),
        )
        .optional()
        .describe("Dispatches waiting for a person's answer; they hold no slot."),
      awaiting_landing: z
        .array(finishedWorktreeSchema)
        .optional()
        .describe(
          "Finished dispatches whose branches wait to be landed or discarded, oldest first (the `status` command's answer; the service API leaves it out).",
        ),
      nothing_to_land: z
        .array(finishedWorktreeSchema)
        .optional()
        .describe(
          "Finished dispatches whose branches have no commits beyond their base: only discard applies (the `status` command's answer; the service API leaves it out).",
        ),
    })
    .describe("Running and queued sessions of the dispatch daemon."),
);
export type ListSessionsResponse = z.output<typeof listSessionsResponseSchema>;
