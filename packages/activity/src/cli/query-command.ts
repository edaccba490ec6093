import { defineCommand } from "citty";
import { formatEntryTable } from "../activity-report";
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

const args = { ...commonArgs, ...filterArgs, ...spanArgs } as const;

export default defineCommand({
  meta: commandMeta.query,
  args,
  async run({ args: values, rawArgs }) {
    assertKnownFlags(rawArgs, args);
    const result = await openLog(values).query(readQuery(values));
    warnProblems(values, result.problems);
    print(values, { entries: result.entries, problems: result.problems, weeksRead: result.weeksRead }, () =>
      formatEntryTable(result.entries),
    );
  },
});
