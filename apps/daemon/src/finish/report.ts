import type { TokenUsage } from "@gstack/agent-runner";
import type { Completion } from "@gstack/contracts";
import { describeSpend, REPORT_SECTIONS, type ReportSections } from "@gstack/daemon-client";
import { stringify } from "yaml";
import { gstackJudgment, renderGstackRun } from "../gstack-run/render-gstack-run";

/** What is known about a dispatch when the report is written, besides the completion fields. */
export interface ReportFacts {
  task: string;
  finalText?: string;
  commitSubjects: string[];
  learningsRecorded: string[];
  /** The agent's last `GSTACK_RESULT:` line, as said, when it said one. */
  gstackResultLine?: string;
}

/**
 * Fills the sections the agent did not write from what the daemon knows: the commits,
 * the error, the last thing the agent said.
 */
export function completeSections(
  parsed: ReportSections | undefined,
  completion: Completion,
  facts: ReportFacts,
): ReportSections {
  const sections: ReportSections = parsed
    ? { ...parsed }
    : { "What shipped": "", "Decisions made": "", "Learnings logged": "", "Needs human judgment": "" };
  if (!sections["What shipped"]) {
    const commits = facts.commitSubjects.map((subject) => `- ${subject}`);
    sections["What shipped"] =
      commits.length > 0
        ? [`${commits.length} commit${commits.length === 1 ? "" : "s"}:`, ...commits].join("\n")
        : "Nothing was committed.";
    if (!parsed && facts.finalText) {
      sections["What shipped"] += `\n\nThe agent's last words (it wrote no report):\n\n> ${facts.finalText
        .trim()
        .slice(0, 2000)
        .replace(/\n/g, "\n> ")}`;
    }
  }
  if (!sections["Decisions made"]) sections["Decisions made"] = "None reported.";
  if (!sections["Learnings logged"]) sections["Learnings logged"] = "None reported.";
  const judgment: string[] = [];
  if (completion.status !== "completed") {
    judgment.push(
      `- The dispatch ended **${completion.status}**${completion.error_kind ? ` (${completion.error_kind})` : ""}: ${completion.error ?? "no reason given"}`,
    );
  }
  if (!parsed) judgment.push("- The agent did not end with the requested report; review its work directly.");
  if (completion.gstack_run) judgment.push(...gstackJudgment(completion.gstack_run));
  else if (facts.gstackResultLine) {
    judgment.push(
      `- The agent's last GSTACK_RESULT line does not parse, so no gstack run was read: \`${facts.gstackResultLine.replace(/`/g, "'").slice(0, 300)}\``,
    );
  }
  if (judgment.length > 0) {
    sections["Needs human judgment"] = [sections["Needs human judgment"], ...judgment]
      .filter(Boolean)
      .join("\n");
  }
  if (!sections["Needs human judgment"]) sections["Needs human judgment"] = "Nothing flagged.";
  return sections;
}

/** The Markdown completion report: YAML frontmatter (the completion) and the four sections. */
export function renderReport(
  completion: Completion,
  sections: ReportSections,
  task: string,
  /** A line under the title, e.g. how often the dispatch ran. */
  note?: string,
): string {
  const title = task.split(/\r?\n/)[0]?.slice(0, 120) ?? completion.dispatch_id;
  const body =
    REPORT_SECTIONS.map((section) => `## ${section}\n\n${sections[section]}\n`).join("\n") +
    (completion.gstack_run ? `\n${renderGstackRun(completion.gstack_run)}` : "");
  const lead = [note, describeSpend(completion.cost_usd, completion.budget_usd)].filter(Boolean).join(" ");
  const work = renderWorkSection(completion);
  return `---\n${stringify(completion, { lineWidth: 0 }).trimEnd()}\n---\n\n# ${title}\n\n${lead}\n\n${body}${work ? `\n${work}` : ""}`;
}

/**
 * The report's last section when the dispatch worked on a branch of its own: where the work is,
 * what it changed, and the commands that land or discard it (only discard when there is nothing
 * to land). Empty for in-place runs.
 */
export function renderWorkSection(completion: Completion): string {
  if (!completion.worktree || !completion.branch) return "";
  const id = completion.dispatch_id;
  const files = completion.files_changed ?? [];
  const lines = [
    "## Where the work is",
    "",
    `Branch \`${completion.branch}\` from \`${completion.base ?? completion.base_sha ?? "?"}\`` +
      `${completion.base_sha ? ` (${completion.base_sha.slice(0, 12)})` : ""}, ${completion.commits ?? 0} commit${completion.commits === 1 ? "" : "s"}, in the worktree ${completion.worktree}.`,
    "",
  ];
  if (files.length > 0) {
    const added = files.reduce((sum, file) => sum + (file.insertions ?? 0), 0);
    const removed = files.reduce((sum, file) => sum + (file.deletions ?? 0), 0);
    lines.push(`${files.length} file${files.length === 1 ? "" : "s"} changed, +${added} −${removed}:`, "");
    for (const file of files) {
      lines.push(
        `- ${file.path} ${file.insertions === undefined ? "(binary)" : `+${file.insertions} −${file.deletions ?? 0}`}`,
      );
    }
    lines.push("");
  }
  if (completion.landing === "nothing") {
    lines.push(
      `Nothing to land: the branch has no commits beyond \`${completion.base ?? completion.base_sha ?? "its base"}\`.`,
      "",
      `- remove its worktree and branch: \`gstack-dispatch discard ${id}\``,
      "",
    );
    return lines.join("\n");
  }
  lines.push(
    "Nothing is in your checkout until you say so:",
    "",
    `- land it: \`gstack-dispatch land ${id}\` (or \`--pr\` to push it and open a pull request)`,
    `- throw it away: \`gstack-dispatch discard ${id}\`${(completion.commits ?? 0) > 0 ? " (needs `--force`: it was never landed)" : ""}`,
    "",
  );
  return lines.join("\n");
}

/**
 * One sentence on the tokens the agent reported for its last run (an ACP agent: with its
 * prompt's answer), or undefined when it reported none. Tokens are never priced here: the cost
 * is only what the agent reports.
 */
export function describeUsage(usage: TokenUsage | undefined): string | undefined {
  if (!usage) return undefined;
  const parts = [`${usage.inputTokens} in`, `${usage.outputTokens} out`];
  if (usage.cachedReadTokens !== undefined) parts.push(`${usage.cachedReadTokens} read from cache`);
  if (usage.cachedWriteTokens !== undefined) parts.push(`${usage.cachedWriteTokens} written to cache`);
  if (usage.thoughtTokens !== undefined) parts.push(`${usage.thoughtTokens} thinking`);
  return `The agent reported ${usage.totalTokens} tokens (${parts.join(", ")}).`;
}
