import type { ActivityEntry } from "@gstack/contracts";

/** Which entries a query keeps. Every field given must match; `until` is exclusive. */
export interface ActivityFilter {
  project?: string;
  skill?: string;
  /** Who dispatched the work (the entry's `dispatch` field). */
  dispatch?: string;
  since?: Date;
  until?: Date;
}

/** True when `entry` passes every condition of `filter`. */
export function matchesFilter(entry: ActivityEntry, filter: ActivityFilter): boolean {
  if (filter.project !== undefined && entry.project !== filter.project) return false;
  if (filter.skill !== undefined && entry.skill !== filter.skill) return false;
  if (filter.dispatch !== undefined && entry.dispatch !== filter.dispatch) return false;
  if (filter.since === undefined && filter.until === undefined) return true;
  const time = Date.parse(entry.ts);
  if (filter.since !== undefined && time < filter.since.getTime()) return false;
  if (filter.until !== undefined && time >= filter.until.getTime()) return false;
  return true;
}

/**
 * Builds a cheap test on a raw JSON line that rejects lines which cannot match the
 * filter's text fields, so most lines of a large file are never parsed. It never rejects
 * a line that could match: a line with any escape sequence is always passed on, and in a
 * line without escapes each string value appears exactly as its JSON text.
 */
export function linePrefilter(filter: ActivityFilter): (line: string) => boolean {
  const needles = filterNeedles(filter);
  if (needles.length === 0) return () => true;
  return (line) => {
    if (line.includes("\\")) return true;
    for (const needle of needles) if (!line.includes(needle)) return false;
    return true;
  };
}

/**
 * The text a raw line without escapes must contain to match the filter: the JSON form of
 * each wanted project, skill and dispatcher, without quotes.
 */
export function filterNeedles(filter: ActivityFilter): string[] {
  return [filter.project, filter.skill, filter.dispatch]
    .filter((value): value is string => value !== undefined)
    .map((value) => JSON.stringify(value).slice(1, -1));
}

/** Orders entries by time, oldest first; equal times keep their order. */
export function sortByTime(entries: readonly ActivityEntry[]): ActivityEntry[] {
  return entries
    .map((entry, index) => ({ entry, index, time: Date.parse(entry.ts) }))
    .sort((left, right) => left.time - right.time || left.index - right.index)
    .map((item) => item.entry);
}
