import { defineCommand } from "citty";
import { formatLastSeen } from "../activity-report";
import {
  assertKnownFlags,
  commonArgs,
  filterArgs,
  openLog,
  print,
  readQuery,
  UsageError,
  warnProblems,
} from "./cli-support";
import { commandMeta } from "./command-meta";

const args = { ...commonArgs, ...filterArgs } as const;

export default defineCommand({
  meta: commandMeta.last,
  args,
  async run({ args: values, rawArgs }) {
    assertKnownFlags(rawArgs, args);
    const filter = readQuery(values);
    if (!filter.project && !filter.skill && !filter.dispatch) {
      throw new UsageError("say what to look for: --project, --skill or --dispatch");
    }
    const { entry, problems } = await openLog(values).last(filter);
    warnProblems(values, problems);
    const what = [
      filter.project,
      filter.skill && `skill ${filter.skill}`,
      filter.dispatch && `work from ${filter.dispatch}`,
    ]
      .filter(Boolean)
      .join(", ");
    print(values, { entry: entry ?? null, problems }, () => formatLastSeen(what, entry, new Date()));
  },
});
