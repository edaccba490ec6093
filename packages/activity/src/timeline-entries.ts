import type { ActivityEntry, TimelineEvent } from "@gstack/contracts";
import { parseValue } from "@gstack/contracts";

/** A timeline event with where it came from, for conversion and error reports. */
export interface LocatedTimelineEvent {
  event: TimelineEvent;
  line: number;
}

/** A timeline line that could not become an activity entry. */
export interface ConversionProblem {
  line: number;
  message: string;
}

/**
 * Turns the events of one project's gstack timeline into activity entries. Only
 * `completed` events count; the project is the timeline's folder slug; the duration is
 * `duration_s` as an integer, or when absent the time since the matching `started` event
 * of the same session and skill, or 0. Empty strings are treated as absent.
 */
export function timelineToEntries(
  project: string,
  events: readonly LocatedTimelineEvent[],
  options: { source?: string } = {},
): { entries: { line: number; entry: ActivityEntry }[]; problems: ConversionProblem[] } {
  const startedAt = new Map<string, number>();
  const entries: { line: number; entry: ActivityEntry }[] = [];
  const problems: ConversionProblem[] = [];
  for (const { event, line } of events) {
    const key = JSON.stringify([event.session ?? "", event.skill]);
    if (event.event === "started") {
      startedAt.set(key, Date.parse(event.ts));
      continue;
    }
    const started = startedAt.get(key);
    startedAt.delete(key);
    const finished = Date.parse(event.ts);
    const duration =
      event.duration_s !== undefined
        ? Number(event.duration_s)
        : started !== undefined && finished >= started
          ? Math.round((finished - started) / 1000)
          : 0;
    const candidate: Record<string, unknown> = {
      ts: event.ts,
      project,
      skill: event.skill,
      duration,
      source: "timeline",
    };
    if (event.branch) candidate.branch = event.branch;
    if (event.outcome) candidate.outcome = event.outcome;
    if (event.session) candidate.session = event.session;
    try {
      const entry = parseValue("activity-entry", candidate, {
        source: `${options.source ?? "timeline"}:${line}`,
      });
      entries.push({ line, entry });
    } catch (error) {
      problems.push({ line, message: (error as Error).message.replaceAll("\n", " ") });
    }
  }
  return { entries, problems };
}
