import { defineCommand } from "citty";
import { renderTable } from "../text-table";
import { assertKnownFlags, commonArgs, openLog, optionalText, print, warnProblems } from "./cli-support";
import { commandMeta } from "./command-meta";

const args = {
  ...commonArgs,
  project: {
    type: "string",
    description: "Only this project's timeline (default: every project)",
    valueHint: "slug",
  },
  "dry-run": { type: "boolean", description: "Show what would be added without writing", default: false },
} as const;

export default defineCommand({
  meta: commandMeta["import-timeline"],
  args,
  async run({ args: values, rawArgs }) {
    assertKnownFlags(rawArgs, args);
    const project = optionalText(values, "project");
    const dryRun = values["dry-run"] === true;
    const result = await openLog(values).importTimeline({ ...(project ? { project } : {}), dryRun });
    warnProblems(values, result.problems);
    print(values, { ...result, dryRun }, () => {
      if (result.projects.length === 0) return "No gstack projects found.";
      const table = renderTable(
        ["project", "completed", dryRun ? "would add" : "added", "already recorded"],
        result.projects.map((report) => [
          report.project,
          String(report.completed),
          String(report.added),
          String(report.skipped),
        ]),
        { alignRight: [1, 2, 3] },
      );
      const tail = `${dryRun ? "Would add" : "Added"} ${result.added}, already recorded ${result.skipped}${
        result.problems.length > 0 ? `, ${result.problems.length} unreadable lines (see warnings)` : ""
      }.`;
      return `${table}\n\n${tail}`;
    });
  },
});
