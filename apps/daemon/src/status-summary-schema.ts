import { z } from "zod";

/*
 * The summary of finished sessions (status-summary.ts) as a schema: what the file must hold.
 * `status` checks it with the hand-written `isFinishedSummary`, which loads no schema library;
 * a property test holds the two to the same judgement.
 */

const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

export const finishedSummarySchema = z.object({
  version: z.literal(1),
  sessions: z.record(
    z.string(),
    z.object({
      stamp: z.string(),
      state: z.object({
        id: z.string(),
        project: z.string(),
        status: z.literal("finished"),
        queued_at: z.string(),
        updated_at: z.string(),
        worktree: z
          .object({
            repo: z.string(),
            path: z.string(),
            cwd: z.string(),
            branch: z.string(),
            base: z.string(),
            base_sha: z.string(),
            land_into: z.string().optional(),
          })
          .optional(),
        worktree_measure: z
          .object({
            commits: count,
            disk_bytes: count,
            tip: z.string().optional(),
            into_tip: z.string().optional(),
          })
          .optional(),
      }),
    }),
  ),
  endings: z
    .record(
      z.string(),
      z.object({
        stamp: z.string(),
        ending: z
          .object({
            dispatch_id: z.string(),
            status: z.string(),
            project: z.string().optional(),
            commits: count.optional(),
            pr: z.string().optional(),
            error_kind: z.string().optional(),
            error: z.string().optional(),
            finished_at: z.string().optional(),
          })
          .nullable(),
      }),
    )
    .optional(),
});
