import { ActivityError } from "./activity-error";

const UNITS = [
  ["h", 3600],
  ["m", 60],
  ["s", 1],
] as const;

/**
 * Writes seconds as `1h 5m 30s`, leaving out zero parts (`0s` for nothing). With
 * `{ round: "minute" }` the seconds are rounded away for summaries (`1h 6m`; under a
 * minute stays in seconds).
 */
export function formatDuration(seconds: number, options: { round?: "minute" } = {}): string {
  let rest = Math.max(0, Math.round(seconds));
  if (options.round === "minute" && rest >= 60) rest = Math.round(rest / 60) * 60;
  const parts: string[] = [];
  for (const [unit, size] of UNITS) {
    const amount = Math.floor(rest / size);
    rest -= amount * size;
    if (amount > 0) parts.push(`${amount}${unit}`);
  }
  return parts.length === 0 ? "0s" : parts.join(" ");
}

const DURATION = /^(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s)?$/;

/**
 * Reads a duration given by a person: a plain number of seconds (`90`) or units
 * (`1h30m`, `1h 5m 30s`, `45s`). Throws an {@link ActivityError} `invalid-duration`.
 */
export function parseDuration(text: string): number {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return checked(Number(trimmed), text);
  const match = DURATION.exec(trimmed);
  if (!match || trimmed === "" || (!match[1] && !match[2] && !match[3])) {
    throw new ActivityError(
      "invalid-duration",
      `${JSON.stringify(text)} is not a duration; use seconds (90) or units (1h30m, 45s)`,
    );
  }
  const [, hours = "0", minutes = "0", seconds = "0"] = match;
  return checked(Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds), text);
}

function checked(seconds: number, text: string): number {
  if (!Number.isSafeInteger(seconds)) {
    throw new ActivityError("invalid-duration", `${JSON.stringify(text)} is too long a duration`);
  }
  return seconds;
}
