import { ContractError, isoWeekOf, parseIsoWeek } from "@gstack/contracts";
import { ActivityError } from "./activity-error";

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;

/**
 * Checks a week label such as `2026-W14` and returns it, or throws an
 * {@link ActivityError} with code `invalid-week`. Weeks are ISO 8601 weeks counted in UTC,
 * the same rule the weekly file names follow.
 */
export function assertWeekLabel(label: string): string {
  try {
    parseIsoWeek(label);
    return label;
  } catch (error) {
    if (!ContractError.isInstance(error)) throw error;
    throw new ActivityError("invalid-week", `${JSON.stringify(label)} is not an ISO week such as 2026-W14`, {
      cause: error,
    });
  }
}

/** The instant a week begins: Monday 00:00 UTC. */
export function weekStart(label: string): Date {
  const { year, week } = parseIsoWeek(assertWeekLabel(label));
  const fourthOfJanuary = Date.UTC(year, 0, 4);
  const weekday = new Date(fourthOfJanuary).getUTCDay() || 7;
  const firstMonday = fourthOfJanuary - (weekday - 1) * DAY_MS;
  return new Date(firstMonday + (week - 1) * WEEK_MS);
}

/** The instant a week ends (exclusive): the next Monday 00:00 UTC. */
export function weekEnd(label: string): Date {
  return new Date(weekStart(label).getTime() + WEEK_MS);
}

/** The week `delta` weeks after (or before, when negative) `label`. */
export function shiftWeek(label: string, delta: number): string {
  return isoWeekOf(new Date(weekStart(label).getTime() + delta * WEEK_MS));
}

/** Orders week labels; the zero-padded form makes text order equal time order. */
export function compareWeeks(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

/** Every week from `first` to `last`, both included, oldest first. Empty when `first` is later. */
export function weeksBetween(first: string, last: string): string[] {
  const weeks: string[] = [];
  const end = weekStart(last).getTime();
  for (let time = weekStart(first).getTime(); time <= end; time += WEEK_MS)
    weeks.push(isoWeekOf(new Date(time)));
  return weeks;
}

/** The weeks that hold any instant in `[since, until)`, oldest first. */
export function weeksOverlapping(since: Date, until: Date): string[] {
  if (until.getTime() <= since.getTime()) return [];
  return weeksBetween(isoWeekOf(since), isoWeekOf(new Date(until.getTime() - 1)));
}

/** The last `count` weeks up to and including the week of `now`, oldest first. */
export function lastWeeks(now: Date, count: number): string[] {
  if (!Number.isInteger(count) || count < 1) {
    throw new ActivityError(
      "invalid-count",
      `the number of weeks must be a whole number of at least 1, not ${count}`,
    );
  }
  const current = isoWeekOf(now);
  return weeksBetween(shiftWeek(current, -(count - 1)), current);
}

/** The span of a week as `[since, until)`. */
export function weekSpan(label: string): { since: Date; until: Date } {
  return { since: weekStart(label), until: weekEnd(label) };
}
