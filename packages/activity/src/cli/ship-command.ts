import { isoWeekOf } from "@gstack/contracts";
import { defineCommand } from "citty";
import type { ActivityQuery } from "../activity-log";
import { formatDay, formatShipReport, formatSpan } from "../activity-report";
import { lastWeeks } from "../week-range";
import {
  assertKnownFlags,
  commonArgs,
  filterArgs,
  openLog,
  print,
  readQuery,
  spanArgs,
  warnProblems,
} from "./cli-support";
import { commandMeta } from "./command-meta";

const args = { ...commonArgs, ...spanArgs, ...filterArgs } as const;

/** Names the span of a query for the report's headline. */
function titleOf(query: ActivityQuery, since?: Date, until?: Date): string {
  const span = since && until ? ` (${formatSpan(since, until)})` : "";
  if (query.week && !query.since && !query.until) return `${query.week}${span}`;
  if (query.weeks && !query.since && !query.until) {
    const weeks = lastWeeks(new Date(), query.weeks);
    return `${weeks.length === 1 ? weeks[0] : `${weeks[0]} – ${weeks.at(-1)}`}${span}`;
  }
  if (since && until) return formatSpan(since, until);
  if (since) return `everything since ${formatDay(since)}`;
  return "everything recorded";
}

export default defineCommand({
  meta: commandMeta.ship,
  args,
  async run({ args: values, rawArgs }) {
    assertKnownFlags(rawArgs, args);
    const query = readQuery(values);
    if (!query.week && !query.weeks && !query.since && !query.until) query.week = isoWeekOf(new Date());
    const result = await openLog(values).summarize(query);
    warnProblems(values, result.problems);
    const title = titleOf(query, result.since, result.until);
    print(
      values,
      { title, since: result.since, until: result.until, summary: result.summary, problems: result.problems },
      () => formatShipReport(result.summary, title),
    );
  },
});
