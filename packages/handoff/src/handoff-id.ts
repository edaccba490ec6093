import { safeNamePattern } from "@gstack/contracts";
import { HandoffError } from "./handoff-error";

/** `YYYYMMDD-HHMMSS` in UTC, the stamp gstack's checkpoint file names start with. */
export function compactStamp(date: Date): string {
  return date
    .toISOString()
    .replace(/\.[0-9]+Z$/, "")
    .replace(/[-:]/g, "")
    .replace("T", "-");
}

/** The id a new handoff gets when none is given: `{YYYYMMDD-HHMMSS}-{project}`. */
export function newHandoffId(project: string, timestamp: Date): string {
  const slug = project.replace(/[^A-Za-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "") || "handoff";
  return `${compactStamp(timestamp)}-${slug}`.slice(0, 120);
}

/** Ids to try in turn when `id` is taken: `id`, `id-2`, `id-3`, … */
export function candidateId(id: string, attempt: number): string {
  return attempt === 0 ? id : `${id.slice(0, 120)}-${attempt + 1}`;
}

/** Throws unless `id` can name a handoff file. */
export function assertHandoffId(id: string): string {
  if (!safeNamePattern.test(id)) {
    throw new HandoffError(
      "invalid-reference",
      `${JSON.stringify(id)} is not a handoff id (letters, digits, '_' and '-', starting with a letter or digit, at most 128)`,
    );
  }
  return id;
}
