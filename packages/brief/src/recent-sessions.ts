import { readFile } from "node:fs/promises";
import { createActivityLog, entryIdentity, sortByTime, timelineToEntries } from "@gstack/activity";
import { type ActivityEntry, gstackLayout, parseJsonLines } from "@gstack/contracts";
import type { SessionLine } from "./brief-types";
import { openWeekIndex } from "./week-index";

/** What reading the recent sessions found, with the lines that could not be read. */
export interface RecentSessions {
  sessions: SessionLine[];
  problems: number;
}

/**
 * The project's newest sessions from both runtimes, newest first: the weekly activity files, read
 * newest week first and only until enough are found (older weeks are never opened), joined with
 * gstack's own timeline of the project, whose completed sessions may not be in the activity index
 * yet. A session in both is counted once. Weeks an unchanged file shows not to name the project are
 * skipped through the week index (see `openWeekIndex`).
 */
export async function recentSessions(
  root: string,
  project: string,
  count: number,
  now: Date = new Date(),
): Promise<RecentSessions> {
  const log = createActivityLog({ root, now: () => now });
  const found: ActivityEntry[] = [];
  let problems = 0;
  const weeks = (await log.weeks()).reverse();
  const index = await openWeekIndex(log.layout);
  for (const week of weeks) {
    if (!(await index.mayHold(week, project))) continue;
    const result = await log.query({ week, project });
    problems += result.problems.length;
    found.push(...result.entries);
    if (found.length >= count) break;
  }
  await index.save();
  const timeline = await timelineEntries(root, project);
  problems += timeline.problems;
  const seen = new Set<string>();
  const merged: ActivityEntry[] = [];
  for (const entry of [...found, ...timeline.entries]) {
    const identity = entryIdentity(entry);
    if (seen.has(identity)) continue;
    seen.add(identity);
    merged.push(entry);
  }
  return {
    sessions: sortByTime(merged).reverse().slice(0, count).map(sessionLine),
    problems,
  };
}

/** The completed sessions of gstack's own timeline of the project (absent file: none). */
async function timelineEntries(
  root: string,
  project: string,
): Promise<{ entries: ActivityEntry[]; problems: number }> {
  let file: string;
  try {
    file = gstackLayout(root).project(project).timeline;
  } catch {
    return { entries: [], problems: 0 };
  }
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { entries: [], problems: 0 };
    throw error;
  }
  const parsed = parseJsonLines("timeline-event", text, { source: file });
  const converted = timelineToEntries(
    project,
    parsed.entries.map((item) => ({ event: item.value, line: item.line })),
    { source: file },
  );
  return {
    entries: converted.entries.map((item) => ({ ...item.entry, source: item.entry.source ?? "timeline" })),
    problems: parsed.problems.length + converted.problems.length,
  };
}

/** One activity entry as a brief shows it. */
export function sessionLine(entry: ActivityEntry): SessionLine {
  const runtime =
    entry.source === "daemon"
      ? "daemon"
      : entry.source === "openclaw"
        ? "openclaw"
        : entry.source === "manual"
          ? "manual"
          : "claude-code";
  return {
    ts: entry.ts,
    skill: entry.skill,
    runtime,
    ...(entry.outcome ? { outcome: entry.outcome } : {}),
    ...(entry.branch ? { branch: entry.branch } : {}),
    shipped: (entry.artifacts ?? []).filter((item) => item.startsWith("pr:") || item.startsWith("commit:")),
    durationSeconds: entry.duration,
    ...(entry.cost_usd !== undefined ? { costUsd: entry.cost_usd } : {}),
    ...(entry.dispatch_id ? { dispatchId: entry.dispatch_id } : {}),
  };
}

/** The project of the newest entry of the activity index, if it has any. */
export async function lastProject(root: string): Promise<string | undefined> {
  const log = createActivityLog({ root });
  const { entry } = await log.last({});
  return entry?.project;
}
