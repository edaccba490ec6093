import type { z } from "zod";
import { lazySchema } from "../lazy";
import { callbackErrorCodeSchema } from "./clawvisor";
import {
  dispatchIdSchema,
  gitRefSchema,
  nonEmptyString,
  pathSchema,
  SAFE_TEXT_MESSAGE,
  SAFE_TEXT_PATTERN,
  targetAgentSchema,
  timestampSchema,
} from "./common";
import { completionSchema, completionStatusSchema } from "./completion";

/**
 * The daemon's local service API: the actions of the `gstack-coding` service, served on
 * the Unix socket `dispatch/.api.sock` (and, when configured, on loopback TCP with a bearer
 * token). Every body that goes in or out is one of the documents below; a refusal is a
 * `callback-error`. COMPATIBILITY.md lists the routes.
 */

/** The routes of the service API, by action. */
export const SERVICE_API_ROUTES = {
  health: { method: "GET", path: "/health" },
  "spawn-session": { method: "POST", path: "/v1/sessions" },
  "list-sessions": { method: "GET", path: "/v1/sessions" },
  "check-status": { method: "GET", path: "/v1/status" },
  "get-completion": { method: "GET", path: "/v1/completion" },
  "cancel-session": { method: "POST", path: "/v1/cancel" },
  "land-session": { method: "POST", path: "/v1/land" },
  "answer-session": { method: "POST", path: "/v1/answer" },
} as const;
export type ServiceApiRoute = keyof typeof SERVICE_API_ROUTES;

/** The version of the routes and bodies above; raised only by a breaking change. */
export const SERVICE_API_VERSION = 1;

/**
 * `spawn-session`: one dispatch, either as the JSON text of the dispatch file (what a
 * template-built request sends, and what signatures are checked against) or as an object.
 */
export const spawnRequestSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch: z
        .union([z.string().min(2), z.record(z.string(), z.unknown())])
        .describe("The dispatch document, as JSON text or as an object."),
    })
    .describe("The body of a spawn-session request."),
);
export type SpawnRequest = z.output<typeof spawnRequestSchema>;

/** The answer to an accepted spawn: durable on disk, queued at `position` (1 is next). */
export const spawnAnswerSchema = lazySchema((z) =>
  z
    .looseObject({
      accepted: z.literal(true),
      dispatch_id: dispatchIdSchema,
      position: z.int().min(1).describe("Place in the queue when taken; 1 starts first."),
      status: z.literal("queued"),
    })
    .describe("A dispatch taken by the daemon."),
);
export type SpawnAnswer = z.output<typeof spawnAnswerSchema>;

/** Where a dispatch is: waiting to be taken, in the queue, running, or ended (the four ends). */
export const snapshotStatusSchema = lazySchema((z) =>
  z.enum([
    "pending",
    "queued",
    "running",
    "retrying",
    "awaiting",
    "completed",
    "failed",
    "cancelled",
    "timeout",
  ]),
);
export type SnapshotStatus = z.infer<typeof snapshotStatusSchema>;

/** What an awaiting dispatch waits for: a person's answer to its plan (or to a gstack gate). */
export const awaitingSchema = lazySchema((z) =>
  z
    .looseObject({
      kind: z.enum(["plan", "gate"]),
      since: timestampSchema,
      expires_at: timestampSchema,
      round: z.int().min(1).describe("Which plan (or gate) this is: 1, then one more per revision."),
      summary: z.string().describe("The plan, or the gate's items, as the agent reported them."),
      how_to_answer: nonEmptyString.describe("What to send, e.g. gstack-dispatch answer <id> approve."),
    })
    .describe("A dispatch waiting for a person."),
);
export type Awaiting = z.output<typeof awaitingSchema>;

const commitShaSchema = lazySchema((z) =>
  z.string().regex(/^[0-9a-f]{7,64}$/, { message: "must be a git commit hash" }),
);

/**
 * One dispatch at one moment: the answer to `check-status` and `get-completion`. A snapshot
 * that is not `terminal` is never a result: `report` is present only when it is. `run` holds
 * only what the current attempt made; what earlier attempts made is under `earlier_runs`.
 */
export const dispatchSnapshotSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch_id: dispatchIdSchema,
      status: snapshotStatusSchema,
      terminal: z.boolean().describe("True once the dispatch has ended; the snapshot then never changes."),
      message: nonEmptyString.describe("One sentence a person can read, e.g. 'still running (turn 4)'."),
      project: nonEmptyString.optional(),
      agent: targetAgentSchema.optional(),
      position: z.int().min(1).optional().describe("Place in the queue while queued."),
      attempt: z.int().min(1).optional().describe("The run this snapshot is about, counting from 1."),
      queued_at: timestampSchema.optional(),
      started_at: timestampSchema.optional(),
      finished_at: timestampSchema.optional(),
      elapsed: z.int().min(0).optional().describe("Seconds since the first start (or since queued)."),
      progress: z
        .looseObject({
          turns: z.int().min(0),
          tool_uses: z.int().min(0),
          last_action: z.string().optional(),
          cost_usd: z
            .number()
            .min(0)
            .optional()
            .describe("Spent so far over every attempt, in US dollars, as reported."),
          budget_usd: z.number().positive().optional().describe("The dispatch's spend cap, when it has one."),
        })
        .optional()
        .describe("Live progress of a running attempt."),
      run: z
        .looseObject({
          attempt: z.int().min(1),
          commit_shas: z.array(commitShaSchema),
          artifacts: z.array(z.string()),
        })
        .optional()
        .describe("What this attempt of this dispatch made, and nothing an earlier attempt made."),
      earlier_runs: z
        .looseObject({ attempts: z.int().min(1), commit_shas: z.array(commitShaSchema) })
        .optional()
        .describe("Commits made by attempts before the current one, when there were any."),
      branch: gitRefSchema.optional().describe("The branch the dispatch works on."),
      worktree: pathSchema.optional().describe("The folder of the dispatch's own worktree, when it has one."),
      awaiting: awaitingSchema
        .optional()
        .describe("What the dispatch waits for, while its status is awaiting."),
      report: completionSchema
        .optional()
        .describe("The completion report; present only when the snapshot is terminal."),
      report_markdown: z.string().optional().describe("The Markdown report, with get-completion."),
    })
    .describe("The state of one dispatch: still going, or its terminal result."),
);
export type DispatchSnapshot = z.output<typeof dispatchSnapshotSchema>;

/** `cancel-session`. */
export const cancelRequestSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch_id: dispatchIdSchema,
      reason: z.string().max(2000).regex(SAFE_TEXT_PATTERN, { message: SAFE_TEXT_MESSAGE }).optional(),
    })
    .describe("The body of a cancel-session request."),
);
export type CancelRequest = z.output<typeof cancelRequestSchema>;

/**
 * What a cancel did: `cancelling` (a running agent is being stopped), `cancelled` (it was
 * queued and is now ended), `pending` (not taken yet; it ends cancelled when taken), or
 * `finished` (it had already ended with `status`; nothing changed).
 */
export const cancelAnswerSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch_id: dispatchIdSchema,
      outcome: z.enum(["cancelling", "cancelled", "pending", "finished"]),
      changed: z.boolean().describe("False when the dispatch had already ended."),
      status: completionStatusSchema.optional().describe("How a finished dispatch ended."),
    })
    .describe("The answer to a cancel-session request."),
);
export type CancelAnswer = z.output<typeof cancelAnswerSchema>;

/**
 * `land-session`: bring a finished dispatch's branch into its base (`land`, or with `pr` push it
 * and open a pull request), or throw the work away (`discard`; an unlanded branch needs `force`).
 */
export const landRequestSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch_id: dispatchIdSchema,
      action: z.enum(["land", "discard"]),
      pr: z.boolean().optional().describe("With land: push the branch and open a pull request instead."),
      force: z.boolean().optional().describe("With discard: throw away a branch that was never landed."),
    })
    .describe("The body of a land-session request."),
);
export type LandRequest = z.output<typeof landRequestSchema>;

/** What landing or discarding did. */
export const landAnswerSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch_id: dispatchIdSchema,
      landing: z.enum(["landed", "pr_opened", "discarded"]),
      changed: z.boolean().describe("False when it had already been done; nothing was done again."),
      how: z
        .enum(["fast-forward", "merge", "pull-request", "removed"])
        .optional()
        .describe("How the work was brought in or removed."),
      branch: gitRefSchema.optional(),
      base: gitRefSchema.optional(),
      commit: z
        .string()
        .regex(/^[0-9a-f]{7,64}$/, { message: "must be a git commit hash" })
        .optional()
        .describe("The base's commit after landing."),
      pr: z.string().optional().describe("The pull request opened, e.g. owner/repo#12 or its URL."),
      message: nonEmptyString.describe("One sentence a person can read."),
    })
    .describe("The answer to a land-session request."),
);
export type LandAnswer = z.output<typeof landAnswerSchema>;

/**
 * `answer-session`: a person's answer to a dispatch waiting for one. `approve` lets the agent
 * carry its plan out; `revise` (with `text`, what to change) makes it plan again; `reject` (with
 * `text`, why) ends the dispatch cancelled. `round`, when given, must be the plan being answered:
 * an answer to an older plan is refused as stale.
 */
export const answerRequestSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch_id: dispatchIdSchema,
      answer: z.enum(["approve", "revise", "reject", "reply"]),
      text: z
        .string()
        .max(20_000)
        .regex(SAFE_TEXT_PATTERN, { message: SAFE_TEXT_MESSAGE })
        .optional()
        .describe(
          "What to change (revise), why (reject), or a gstack gate reply (reply: all, d3b, all except d3b).",
        ),
      round: z.int().min(1).optional().describe("The plan (or gate) round answered; refused when stale."),
    })
    .describe("The body of an answer-session request."),
);
export type AnswerRequest = z.output<typeof answerRequestSchema>;

/** What an accepted answer did; it is on disk and takes effect exactly once. */
export const answerAnswerSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch_id: dispatchIdSchema,
      answer: z.enum(["approve", "revise", "reject", "reply"]),
      round: z.int().min(1),
      status: snapshotStatusSchema.describe("Where the dispatch is now: queued to run again, or cancelled."),
      message: nonEmptyString.describe("One sentence a person can read."),
    })
    .describe("The answer to an answer-session request."),
);
export type AnswerAnswer = z.output<typeof answerAnswerSchema>;

/** `GET /health`: the service front answers even while the daemon is down. */
export const serviceHealthSchema = lazySchema((z) =>
  z
    .looseObject({
      ok: z.boolean(),
      daemon: z.enum(["running", "not_running", "stopping"]),
      api_version: z.int().min(1),
      pid: z.int().min(1).optional(),
      version: z.string().optional(),
      mode: z.enum(["local-only", "clawvisor"]).optional(),
      error: callbackErrorCodeSchema.optional().describe("Why the daemon cannot take work right now."),
      message: z.string().optional(),
    })
    .describe("Whether the dispatch service can take work."),
);
export type ServiceHealth = z.output<typeof serviceHealthSchema>;
