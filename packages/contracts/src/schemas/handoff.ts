import type { z } from "zod";
import { lazySchema } from "../lazy";
import {
  boundedString,
  gitRefSchema,
  pathSchema,
  projectSlugSchema,
  SAFE_TEXT_MESSAGE,
  SAFE_TEXT_PATTERN,
  safeLineSchema,
  safeNamePattern,
  safeTextSchema,
  timestampSchema,
} from "./common";

export const RESUME_PROMPT_MAX = 4096;

export const handoffStatuses = ["pending", "picked_up"] as const;

export const runtimeNamePattern = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** Which runtime wrote a handoff, or the name of the OpenClaw agent (e.g. 'wintermute'). */
export const runtimeNameSchema = lazySchema((z) =>
  z.string().regex(runtimeNamePattern, { message: "must be a lower-case runtime or agent name" }),
);

/**
 * A handoff: work carried from one runtime to the other, stored as `handoff/{id}.md`
 * (YAML frontmatter plus the sections Context, State, What I need and Resume prompt).
 * This schema describes the whole handoff as one object; the Markdown sections map to
 * `context`, `state`, `what_i_need` and `resume_prompt`.
 */
export const handoffSchema = lazySchema((z) =>
  z
    .looseObject({
      id: z.string().regex(safeNamePattern, { message: "must be a safe file name" }).optional(),
      from: runtimeNameSchema.describe("'gstack' for the coding runtime, or the OpenClaw agent's name."),
      to: runtimeNameSchema,
      project: projectSlugSchema,
      branch: gitRefSchema.optional(),
      timestamp: timestampSchema,
      status: z.enum(handoffStatuses).default("pending"),
      picked_up_at: timestampSchema.optional(),
      picked_up_by: safeLineSchema.optional(),
      project_dir: pathSchema.optional(),
      source: safeLineSchema.optional().describe("Where the handoff came from, e.g. a checkpoint file."),
      context: safeTextSchema.optional(),
      state: safeTextSchema.optional(),
      what_i_need: safeTextSchema.optional(),
      resume_prompt: boundedString(RESUME_PROMPT_MAX)
        .regex(SAFE_TEXT_PATTERN, { message: SAFE_TEXT_MESSAGE })
        .optional()
        .describe("Exact prompt that resumes the work."),
    })
    .describe("Work handed from one runtime to the other."),
);

export type Handoff = z.output<typeof handoffSchema>;
export type HandoffInput = z.input<typeof handoffSchema>;

/** Frontmatter of a gstack `/context-save` checkpoint file. */
export const checkpointFrontmatterSchema = lazySchema((z) =>
  z.looseObject({
    status: z.string().optional(),
    branch: z.string().optional(),
    timestamp: z.union([timestampSchema, z.string()]).optional(),
    session_duration_s: z.union([z.int().min(0), z.string().regex(/^[0-9]+$/)]).optional(),
    files_modified: z.array(z.string()).optional(),
  }),
);
export type CheckpointFrontmatter = z.output<typeof checkpointFrontmatterSchema>;
