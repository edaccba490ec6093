import type { z } from "zod";
import { lazySchema } from "../lazy";
import { nonEmptyString, projectSlugSchema, skillNameSchema, timestampSchema } from "./common";

export const activitySources = ["timeline", "daemon", "manual", "openclaw"] as const;

/**
 * One line of a weekly activity file `activity/activity-YYYY-WNN.jsonl`: a piece of work
 * that finished, in either runtime.
 */
export const activityEntrySchema = lazySchema((z) =>
  z
    .looseObject({
      ts: timestampSchema.describe("When the work finished."),
      project: projectSlugSchema,
      skill: skillNameSchema.describe("The gstack skill or kind of work, e.g. 'ship', 'review'."),
      artifacts: z
        .array(z.string())
        .optional()
        .describe("What it produced: 'pr:47', 'commit:abc1234', 'learnings:3'."),
      duration: z.int().min(0).describe("Seconds."),
      dispatch: nonEmptyString.optional().describe("Who dispatched the work, if anyone (e.g. 'wintermute')."),
      dispatch_id: nonEmptyString.optional(),
      branch: nonEmptyString.optional(),
      outcome: nonEmptyString.optional().describe("e.g. 'success', 'failed'."),
      session: nonEmptyString.optional(),
      source: z.enum(activitySources).optional().describe("Which writer recorded it."),
      cost_usd: z.number().min(0).optional().describe("What the work cost, in US dollars, when known."),
    })
    .describe("One finished piece of work in the weekly activity index."),
);

export type ActivityEntry = z.output<typeof activityEntrySchema>;

export const timelineEvents = ["started", "completed"] as const;
export const timelineDurationPattern = /^[0-9]+$/;

/** One line of gstack's `projects/{slug}/timeline.jsonl`. */
export const timelineEventSchema = lazySchema((z) =>
  z.looseObject({
    skill: nonEmptyString,
    event: z.enum(timelineEvents),
    branch: z.string().optional(),
    outcome: z.string().optional(),
    duration_s: z
      .string()
      .regex(timelineDurationPattern, { message: "must be a string of digits" })
      .optional(),
    session: z.string().optional(),
    ts: timestampSchema,
  }),
);
export type TimelineEvent = z.output<typeof timelineEventSchema>;
