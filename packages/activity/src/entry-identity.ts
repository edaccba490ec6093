import type { ActivityEntry } from "@gstack/contracts";

/**
 * The identity of a piece of work, used to keep an import from adding it twice: project,
 * session, skill and the instant it finished (the same instant written with another
 * offset is the same identity). Two entries with equal identity describe the same work.
 */
export function entryIdentity(entry: Pick<ActivityEntry, "project" | "session" | "skill" | "ts">): string {
  const time = Date.parse(entry.ts);
  const instant = Number.isNaN(time) ? entry.ts : new Date(time).toISOString();
  return JSON.stringify([entry.project, entry.session ?? "", entry.skill, instant]);
}
