import { isoWeekOf } from "@gstack/contracts";
import { defineCommand } from "citty";
import { formatEntryTable, formatSpan } from "../activity-report";
import { summarizeActivity } from "../activity-summary";
import { formatDuration } from "../duration-text";
import { assertWeekLabel, weekEnd, weekStart } from "../week-range";
import {
  assertKnownFlags,
  commonArgs,
  filterArgs,
  openLog,
  optionalText,
  print,
  readQuery,
  warnProblems,
} from "./cli-support";
import { commandMeta } from "./command-meta";

const args = {
  ...commonArgs,
  week: { type: "string", description: "ISO week, e.g. 2026-W14 (default: this week)", valueHint: "week" },
  ...filterArgs,
} as const;

export default defineCommand({
  meta: commandMeta.week,
  args,
  async run({ args: values, rawArgs }) {
    assertKnownFlags(rawArgs, args);
    const week = assertWeekLabel(optionalText(values, "week") ?? isoWeekOf(new Date()));
    const result = await openLog(values).query({ ...readQuery(values), week });
    warnProblems(values, result.problems);
    const summary = summarizeActivity(result.entries);
    print(
      values,
      {
        week,
        since: weekStart(week),
        until: weekEnd(week),
        entries: result.entries,
        problems: result.problems,
      },
      () =>
        [
          `${week} (${formatSpan(weekStart(week), weekEnd(week))})`,
          "",
          formatEntryTable(result.entries),
          "",
          `${summary.entries} entries · ${summary.sessions} sessions · ${formatDuration(summary.duration, { round: "minute" })}`,
        ].join("\n"),
    );
  },
});
