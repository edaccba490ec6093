import type { z } from "zod";
import { lazySchema } from "../lazy";
import { timestampSchema } from "./common";

export const learningTypes = [
  "pattern",
  "pitfall",
  "preference",
  "architecture",
  "tool",
  "operational",
  "investigation",
] as const;
export const learningTypeSchema = lazySchema((z) => z.enum(learningTypes));
export type LearningType = z.infer<typeof learningTypeSchema>;

export const learningSources = ["observed", "user-stated", "inferred", "cross-model"] as const;
export const learningSourceSchema = lazySchema((z) => z.enum(learningSources));
export type LearningSource = z.infer<typeof learningSourceSchema>;

export const learningKeyPattern = /^[a-zA-Z0-9_-]+$/;

/**
 * One line of gstack's `projects/{slug}/learnings.jsonl`. Older lines may lack fields, so
 * only `key`, `type` and `insight` are required; unknown fields are kept as they are.
 * Learnings imported from OpenClaw carry `origin` (e.g. `openclaw:memory/gstack-acme.md`).
 */
export const learningSchema = lazySchema((z) =>
  z
    .looseObject({
      skill: z.string().optional(),
      type: learningTypeSchema,
      key: z
        .string()
        .regex(learningKeyPattern, { message: "must contain only letters, digits, '_' and '-'" }),
      insight: z.string(),
      confidence: z.int().min(1).max(10).optional(),
      source: learningSourceSchema.optional(),
      files: z.array(z.string()).optional(),
      ts: timestampSchema.optional(),
      trusted: z.boolean().optional(),
      origin: z.string().optional().describe("Where a learning imported from another runtime came from."),
    })
    .describe("A learning in gstack's learnings.jsonl."),
);

export type Learning = z.output<typeof learningSchema>;
