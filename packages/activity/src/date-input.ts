import { ActivityError } from "./activity-error";
import { weekEnd, weekStart } from "./week-range";

const DATE_ONLY = /^(\d{4})-(\d{2})-(\d{2})$/;
const WEEK = /^\d{4}-W\d{2}$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * Reads a date bound given by a person and returns the instant it stands for. A day
 * (`2026-04-01`) or a week (`2026-W14`) stands for its start with `edge: "start"` and
 * for its end (the next day or week, exclusive) with `edge: "end"`, so
 * `--since 2026-04-01 --until 2026-04-07` covers both days whole. A full timestamp with a
 * zone is taken as is. Days and weeks are UTC, like the weekly files.
 */
export function parseDateBound(text: string, edge: "start" | "end"): Date {
  const trimmed = text.trim();
  const day = DATE_ONLY.exec(trimmed);
  if (day) {
    const [year, month, date] = [Number(day[1]), Number(day[2]), Number(day[3])];
    const start = new Date(Date.UTC(year, month - 1, date));
    if (start.getUTCFullYear() !== year || start.getUTCMonth() !== month - 1 || start.getUTCDate() !== date) {
      throw invalid(text);
    }
    return edge === "start" ? start : new Date(start.getTime() + 86_400_000);
  }
  if (WEEK.test(trimmed)) {
    try {
      return edge === "start" ? weekStart(trimmed) : weekEnd(trimmed);
    } catch (error) {
      throw invalid(text, error);
    }
  }
  if (TIMESTAMP.test(trimmed)) {
    const instant = new Date(trimmed);
    if (!Number.isNaN(instant.getTime())) return instant;
  }
  throw invalid(text);
}

function invalid(text: string, cause?: unknown): ActivityError {
  return new ActivityError(
    "invalid-date",
    `${JSON.stringify(text)} is not a date; use 2026-04-01, 2026-W14 or 2026-04-01T09:30:00Z`,
    { cause },
  );
}
