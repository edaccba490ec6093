import { ContractError } from "@gstack/contracts";
import type { ArgsDef } from "citty";
import { ActivityError } from "../activity-error";
import type { ActivityLog, ActivityQuery, ReadProblem } from "../activity-log";
import { createActivityLog } from "../activity-log";
import { parseDateBound } from "../date-input";
import { assertWeekLabel } from "../week-range";

/** Arguments every command takes. */
export const commonArgs = {
  root: {
    type: "string",
    description: "gstack state root (default: $GSTACK_HOME, else $CLAUDE_PLUGIN_DATA, else ~/.gstack)",
    valueHint: "dir",
  },
  json: { type: "boolean", description: "Print JSON for programs instead of text", default: false },
} as const satisfies ArgsDef;

/** Filters shared by the reading commands. */
export const filterArgs = {
  project: { type: "string", description: "Only this project (gstack slug)", valueHint: "slug" },
  skill: { type: "string", description: "Only this skill, e.g. ship or review", valueHint: "name" },
  dispatch: { type: "string", description: "Only work dispatched by this agent", valueHint: "name" },
} as const satisfies ArgsDef;

/** Span options shared by the reading commands. */
export const spanArgs = {
  week: { type: "string", description: "One ISO week, e.g. 2026-W14", valueHint: "week" },
  weeks: { type: "string", description: "The last N weeks, this one included", valueHint: "n" },
  since: { type: "string", description: "From this day, week or timestamp (inclusive)", valueHint: "date" },
  until: {
    type: "string",
    description: "Up to this day, week or timestamp (inclusive of a whole day/week)",
    valueHint: "date",
  },
} as const satisfies ArgsDef;

/** Bad command-line input: exits with status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

type Values = Record<string, unknown>;

const text = (values: Values, name: string): string | undefined => {
  const value = values[name];
  if (value === undefined || value === false) return undefined;
  if (typeof value !== "string" || value === "") throw new UsageError(`--${name} needs a value`);
  return value;
};

/** Opens the log at `--root`, or where the environment says. */
export function openLog(values: Values): ActivityLog {
  const root = text(values, "root");
  return createActivityLog(root ? { root } : {});
}

/** Reads the filter and span flags into a query. */
export function readQuery(values: Values): ActivityQuery {
  const query: ActivityQuery = {};
  for (const name of ["project", "skill", "dispatch"] as const) {
    const value = text(values, name);
    if (value !== undefined) query[name] = value;
  }
  const week = text(values, "week");
  if (week !== undefined) query.week = assertWeekLabel(week);
  const weeks = text(values, "weeks");
  if (weeks !== undefined) {
    if (!/^\d+$/.test(weeks) || Number(weeks) < 1) {
      throw new ActivityError(
        "invalid-count",
        `--weeks must be a whole number of at least 1, not ${JSON.stringify(weeks)}`,
      );
    }
    query.weeks = Number(weeks);
  }
  const since = text(values, "since");
  if (since !== undefined) query.since = parseDateBound(since, "start");
  const until = text(values, "until");
  if (until !== undefined) query.until = parseDateBound(until, "end");
  return query;
}

/** Optional string flag, refusing an empty value. */
export function optionalText(values: Values, name: string): string | undefined {
  return text(values, name);
}

/**
 * Refuses flags the command does not define, so a typo such as `--projct` is an error
 * rather than a silently wider answer.
 */
export function assertKnownFlags(rawArgs: readonly string[], args: ArgsDef): void {
  const known = new Set<string>(["help", "h"]);
  for (const [name, definition] of Object.entries(args)) {
    known.add(name);
    known.add(name.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`));
    known.add(name.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase()));
    const aliases = "alias" in definition ? definition.alias : undefined;
    for (const alias of Array.isArray(aliases) ? aliases : aliases ? [aliases] : []) known.add(alias);
  }
  for (const raw of rawArgs) {
    if (raw === "--") break;
    if (!raw.startsWith("-") || raw === "-" || /^-\d/.test(raw)) continue;
    const name = raw.replace(/^--?/, "").split("=")[0]!.replace(/^no-/, "");
    if (!known.has(name)) throw new UsageError(`unknown option ${raw.split("=")[0]}`);
  }
}

/** Prints JSON or text to stdout. */
export function print(values: Values, json: unknown, human: () => string): void {
  process.stdout.write(values.json ? `${JSON.stringify(json, null, 2)}\n` : `${human()}\n`);
}

/** Reports unreadable lines on stderr (text mode); they never fail a command. */
export function warnProblems(values: Values, problems: readonly ReadProblem[]): void {
  if (values.json) return;
  for (const problem of problems) {
    const where = problem.line > 0 ? `${problem.file}:${problem.line}` : problem.file;
    process.stderr.write(`warning: ${where}: ${problem.message}\n`);
  }
}

/** One line describing any error, for the last line a user sees. */
export function describeError(error: unknown): string {
  if (ContractError.isInstance(error)) {
    return `${error.source}: invalid ${error.kind}: ${error.issues
      .map((issue) => `${issue.path || "(document)"} ${issue.message}`)
      .join("; ")}`;
  }
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\u001b\[[0-9;]*m/g, "").replace(/\s*\n\s*/g, "; ");
}

/** Exit status: 2 for bad input, 1 for anything else that went wrong. */
export function exitCodeOf(error: unknown): number {
  if (ContractError.isInstance(error) || error instanceof UsageError) return 2;
  if (ActivityError.isInstance(error)) return error.code === "import-busy" ? 1 : 2;
  if (error instanceof Error && error.name === "CLIError") return 2;
  return 1;
}
