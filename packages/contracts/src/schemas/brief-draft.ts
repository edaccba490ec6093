import type { z } from "zod";
import { lazySchema } from "../lazy";
import { replyToSchema } from "./callback";
import {
  boundedString,
  budgetUsdSchema,
  dispatchIdSchema,
  displayNameSchema,
  gitRefSchema,
  pathSchema,
  projectSlugSchema,
  safeLineSchema,
  safeTextSchema,
  timestampSchema,
} from "./common";

/** Where a drafted task came from. */
export const briefDraftSources = ["checkpoint", "handoff", "open-work"] as const;

export const briefDraftIdPattern = /^draft-[A-Za-z0-9_-]{1,120}$/;

/**
 * A dispatch drafted by a brief (`{plugin state}/drafts/{draft_id}.json`): the next piece of work on a
 * project, written down before the person has agreed to it. It is never sent on its own: only the
 * person's word turns it into an ordinary dispatch, with exactly these fields, and only once (the
 * dispatch id is chosen when the draft is made; `sent` records the sending).
 */
export const briefDraftSchema = lazySchema((z) =>
  z
    .looseObject({
      draft_id: z.string().regex(briefDraftIdPattern, {
        message: "must start with 'draft-' followed by 1 to 120 letters, digits, '_' or '-'",
      }),
      created_at: timestampSchema,
      project: projectSlugSchema,
      project_dir: pathSchema.describe("The repository folder the agent will work in."),
      task: safeTextSchema.min(1).describe("The task, e.g. the checkpoint's resume prompt."),
      source: z.enum(briefDraftSources).describe("Where the task came from."),
      source_ref: safeLineSchema
        .optional()
        .describe("The checkpoint, handoff or dispatch the task continues, e.g. 'checkpoint:acme-baku/…'."),
      dispatch_id: dispatchIdSchema.describe("The id the dispatch will carry when it is sent (chosen once)."),
      base: gitRefSchema.optional().describe("What the dispatch's worktree starts from."),
      branch: gitRefSchema.optional().describe("The branch the work happens on (default gstack/<id>)."),
      budget_usd: budgetUsdSchema.optional().describe("The spend cap: the daemon's default_budget_usd."),
      mode: z.enum(["execute", "plan"]).optional().describe("'plan' when the project is planned first."),
      handoff_id: safeLineSchema.optional(),
      task_type: displayNameSchema.optional(),
      learnings: z
        .array(safeTextSchema)
        .optional()
        .describe("The brief's top learnings, passed to the agent."),
      reply_to: replyToSchema.optional().describe("The session the brief was given in."),
      delivered_to: z
        .looseObject({
          channel: boundedString(128, 1).describe("The OpenClaw channel, e.g. 'telegram'."),
          to: boundedString(512, 1).describe("The person's address on it, as OpenClaw names it."),
          account_id: boundedString(128, 1).optional(),
          thread_id: boundedString(256, 1).optional(),
        })
        .optional()
        .describe(
          "Where the brief that showed this draft went (a scheduled brief's channel and person): a yes from there without the draft's id finds it.",
        ),
      sent: z
        .looseObject({
          dispatch_id: dispatchIdSchema,
          at: timestampSchema,
          reply_to: replyToSchema.optional(),
        })
        .optional()
        .describe("Set once the person's word sent it; a second word sends nothing more."),
    })
    .describe("A dispatch drafted by a brief, waiting for the person's word."),
);
export type BriefDraft = z.output<typeof briefDraftSchema>;
