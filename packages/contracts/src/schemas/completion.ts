import type { z } from "zod";
import { lazySchema } from "../lazy";
import {
  dispatchIdSchema,
  gitRefSchema,
  nonEmptyString,
  pathSchema,
  targetAgentSchema,
  timestampSchema,
} from "./common";
import { gstackRunSummarySchema } from "./gstack-run";

/**
 * A pull request as `owner/repo#number`: an owner of letters, digits, `-` and `_` that starts
 * with a letter or digit, a repository name that is not `.` or `..`, and a number from 1.
 */
export const PULL_REQUEST_PATTERN =
  /^[A-Za-z0-9][A-Za-z0-9_-]{0,99}\/(?!\.{1,2}#)[A-Za-z0-9_.-]{1,100}#[1-9][0-9]{0,9}$/;

/** Why a dispatch failed, as classified from the agent's structured output. */
export const failureKindSchema = lazySchema((z) =>
  z.enum([
    "rate_limit",
    "context_overflow",
    "tool_failure",
    "logic_error",
    "auth",
    "spawn_error",
    "agent_crashed",
    "timeout",
    "cancelled",
    "unknown",
    "budget_exhausted",
  ]),
);
export type FailureKind = z.infer<typeof failureKindSchema>;

export const completionStatusSchema = lazySchema((z) =>
  z.enum(["completed", "failed", "cancelled", "timeout"]),
);
export type CompletionStatus = z.infer<typeof completionStatusSchema>;

/**
 * The completion report the daemon writes when a dispatch ends: the frontmatter of
 * `dispatch/completed/{id}.md` and the whole of `{id}.json`.
 *
 * The design's report carried a `pr` but no list of what was made; `commit_shas`,
 * `artifacts`, `retries`, `error_kind` and the timing fields are optional additions so a
 * reader can answer "what happened" without opening the git log.
 */
export const completionSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch_id: dispatchIdSchema,
      status: completionStatusSchema,
      duration: z.int().min(0).describe("Wall-clock seconds from first spawn to the end."),
      commits: z.int().min(0).optional().describe("Commits made on the working branch during the dispatch."),
      pr: z.string().regex(PULL_REQUEST_PATTERN, { message: "must look like owner/repo#123" }).optional(),
      error: z.string().optional().describe("Present only when the dispatch did not complete."),
      error_kind: failureKindSchema.optional(),
      retries: z.int().min(0).optional(),
      project: nonEmptyString.optional(),
      agent: targetAgentSchema.optional(),
      session_id: nonEmptyString.optional().describe("The agent's session id, for resuming."),
      started_at: timestampSchema.optional(),
      finished_at: timestampSchema.optional(),
      branch: gitRefSchema.optional(),
      commit_shas: z
        .array(z.string().regex(/^[0-9a-f]{7,64}$/, { message: "must be a git commit hash" }))
        .optional(),
      artifacts: z
        .array(z.string())
        .optional()
        .describe("Things produced, e.g. 'pr:47', 'file:docs/auth.md'."),
      attempt: z
        .int()
        .min(1)
        .optional()
        .describe("The attempt whose end this report is (1 unless retried or re-run)."),
      run_commit_shas: z
        .array(z.string().regex(/^[0-9a-f]{7,64}$/, { message: "must be a git commit hash" }))
        .optional()
        .describe("The commits of `commit_shas` made by that last attempt alone."),
      base: gitRefSchema
        .optional()
        .describe(
          "What the work started from: the dispatch's base, else the branch (or commit) checked out.",
        ),
      base_sha: z
        .string()
        .regex(/^[0-9a-f]{7,64}$/, { message: "must be a git commit hash" })
        .optional()
        .describe("The commit the work started from."),
      worktree: pathSchema
        .optional()
        .describe("The folder the agent worked in, when the dispatch ran in a worktree of its own."),
      files_changed: z
        .array(
          z.looseObject({
            path: pathSchema,
            insertions: z.int().min(0).optional().describe("Absent for a binary file."),
            deletions: z.int().min(0).optional().describe("Absent for a binary file."),
          }),
        )
        .optional()
        .describe("Files the dispatch's commits changed against the base, with lines added and removed."),
      landing: z
        .enum(["awaiting", "landed", "pr_opened", "discarded", "in_place", "nothing"])
        .optional()
        .describe(
          "Where the work stands: awaiting the person's word (land or discard), landed into its base, pushed with a pull request opened, discarded, made in place in the project's checkout, or nothing to land (its branch has no commits beyond its base; only discard applies).",
        ),
      turns: z.int().min(0).optional(),
      cost_usd: z
        .number()
        .min(0)
        .optional()
        .describe("What the agent reported spending, in US dollars, over every attempt."),
      budget_usd: z
        .number()
        .positive()
        .optional()
        .describe("The spend cap the dispatch ran under, when it had one."),
      reply_to: z
        .looseObject({ runtime: z.literal("openclaw"), session_key: z.string().min(1) })
        .optional()
        .describe("Copied from the dispatch: the OpenClaw session the completion goes back to."),
      gstack_run: gstackRunSummarySchema
        .optional()
        .describe(
          "The gstack unattended run the agent's last GSTACK_RESULT line named, as the daemon read it.",
        ),
    })
    .describe("The report written when a dispatch ends."),
);

export type Completion = z.output<typeof completionSchema>;
export type CompletionInput = z.input<typeof completionSchema>;
