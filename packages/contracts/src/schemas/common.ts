import { z } from "zod";

/** An ISO 8601 timestamp with a timezone (`Z` or an offset), as every shared file writes it. */
export const timestampSchema = z.iso.datetime({ offset: true });

/** A name that is safe as a file name on every platform: no separators, no dot segments. */
export const safeNamePattern = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** A gstack project slug: letters, digits, `.`, `_` and `-`, never `.` or `..` alone. */
export const projectSlugSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^(?!\.{1,2}$)[A-Za-z0-9._-]+$/, {
    message: "must be a project slug (letters, digits, '.', '_' and '-' only)",
  });

/** Dispatch ids name files, so they are restricted to a safe alphabet. */
export const dispatchIdSchema = z.string().regex(/^dispatch-[A-Za-z0-9_-]{1,120}$/, {
  message: "must start with 'dispatch-' followed by 1 to 120 letters, digits, '_' or '-'",
});

/** The coding agents a dispatch may target. */
export const targetAgentSchema = z.enum(["claude", "codex", "cursor", "gemini"]);

export const nonEmptyString = z.string().min(1);
export const stringList = z.array(z.string());
