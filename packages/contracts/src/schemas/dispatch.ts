import type { z } from "zod";
import { lazySchema } from "../lazy";
import { replyToSchema } from "./callback";
import {
  boundedString,
  budgetUsdSchema,
  dispatchIdSchema,
  displayNameSchema,
  gitRefSchema,
  httpUrlSchema,
  pathEntrySchema,
  pathSchema,
  projectSlugSchema,
  SAFE_TEXT_MESSAGE,
  SAFE_TEXT_PATTERN,
  safeLineSchema,
  safeTextSchema,
  targetAgentSchema,
  timestampSchema,
} from "./common";

export const sourceSignaturePattern = /^[0-9a-f]{64}$/;

/** What a dispatch may ask for in `mode`: run at once, or plan first and wait for a person. */
export const DISPATCH_MODES = ["execute", "plan"] as const;

/** The longest task, in characters (code points). */
export const TASK_MAX = 100_000;

/**
 * A coding task that the OpenClaw agent hands to the dispatch daemon, written as
 * `dispatch/{id}.json` under the gstack state root.
 *
 * Beyond the original design: `created_at` anchors `ttl_seconds` (without it the daemon
 * uses the time it first saw the file), and `branch`, `task_type`, `files` and `handoff_id`
 * let a dispatch carry what routing and handoffs already know.
 */
export const dispatchSchema = lazySchema((z) =>
  z
    .looseObject({
      id: dispatchIdSchema.describe("Unique id; also the file name. Starts with 'dispatch-'."),
      dispatched_by: displayNameSchema.describe("The agent that created the dispatch, e.g. 'wintermute'."),
      task: boundedString(TASK_MAX, 1)
        .regex(SAFE_TEXT_PATTERN, { message: SAFE_TEXT_MESSAGE })
        .describe("What the coding agent should do."),
      project: projectSlugSchema.describe("gstack project slug."),
      project_dir: pathSchema.describe("Working directory of the agent; '~' expands to the home folder."),
      learnings: z.array(safeTextSchema).optional().describe("Memories the dispatcher thinks are relevant."),
      constraints: z.array(safeTextSchema).optional().describe("Requirements the work must respect."),
      callback_url: httpUrlSchema
        .optional()
        .describe("Where the completion report is POSTed (Clawvisor or an OpenClaw hook)."),
      clawvisor_task_id: safeLineSchema.optional(),
      target_agent: targetAgentSchema.default("claude").describe("Which coding agent runs the task."),
      source_signature: z
        .string()
        .regex(sourceSignaturePattern, { message: "must be 64 lowercase hex digits (HMAC-SHA256)" })
        .optional()
        .describe("HMAC-SHA256 over the canonical JSON of every other field; see COMPATIBILITY.md."),
      ttl_seconds: z
        .int()
        .min(60)
        .max(86_400)
        .optional()
        .describe("Seconds after created_at the dispatch expires."),
      created_at: timestampSchema.optional().describe("When the dispatch was written; anchors ttl_seconds."),
      branch: gitRefSchema
        .optional()
        .describe(
          "Branch the work happens on, in a worktree of its own (default gstack/<id>). The daemon refuses a name git would refuse (git check-ref-format --branch) or one starting with '-'.",
        ),
      base: gitRefSchema
        .optional()
        .describe(
          "Branch, tag or commit the dispatch's worktree starts from (never starting with '-'); the commit the project's checkout is on when absent.",
        ),
      task_type: displayNameSchema
        .optional()
        .describe("Kind of work (e.g. 'security', 'shipping'), used by routing."),
      files: z
        .array(pathEntrySchema)
        .optional()
        .describe("Paths the task is expected to touch, used by routing."),
      handoff_id: safeLineSchema.optional().describe("The handoff this dispatch continues, if any."),
      reply_to: replyToSchema
        .optional()
        .describe("The OpenClaw session that asked; its completion goes back there."),
      budget_usd: budgetUsdSchema
        .optional()
        .describe(
          "Spend cap in US dollars: the agent is stopped when its reported cost reaches it (default: the daemon's default_budget_usd).",
        ),
      mode: z
        .enum(DISPATCH_MODES)
        .optional()
        .describe(
          "'plan': the agent first plans read-only and the dispatch waits for a person to approve, revise or reject the plan; 'execute' (default) runs at once unless the daemon's plan_first_repos names the project folder.",
        ),
    })
    .describe("A coding task dispatched from OpenClaw to the gstack dispatch daemon."),
);

export type Dispatch = z.output<typeof dispatchSchema>;
export type DispatchInput = z.input<typeof dispatchSchema>;
