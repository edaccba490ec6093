import type { Completion } from "@gstack/contracts";
import { bulletItems, parseReportSections } from "@gstack/daemon";

/** What a completion message is made of: the report's facts and its Markdown, when known. */
export interface CompletionNews {
  completion: Completion;
  /** The summary a callback carried, when there was one. */
  summary?: string;
  needsJudgment?: string[];
  reportMarkdown?: string;
}

const WHAT_TO_DO: Record<string, string> = {
  rate_limit: "the model provider rate-limited the agent; dispatch it again later.",
  context_overflow: "the task did not fit the model's context; split it into smaller dispatches.",
  tool_failure: "a tool the agent needed failed; read the report and fix the environment before retrying.",
  logic_error: "the agent could not do the task as asked; read the report and rephrase or narrow the task.",
  auth: "the coding agent is not signed in or its key is invalid; ask the user to fix its credentials.",
  spawn_error: "the coding agent could not be started; ask the user to check that it is installed.",
  agent_crashed:
    "the coding agent's CLI crashed; ask the user to read the session's stderr on the daemon's machine and update or reinstall the CLI.",
  timeout: "the work ran past its time limit; split it up or raise session_timeout_seconds.",
  cancelled: "it was cancelled; nothing more will happen unless it is dispatched again.",
  budget_exhausted: "it spent its budget; dispatch it again with a higher budget_usd or a narrower task.",
  unknown: "read the report with gstack_report and decide with the user.",
};

/**
 * The text posted into the dispatching session when a dispatch ends: status, summary, what
 * shipped, PR and commits, every "needs human judgment" item, and for a failure its kind
 * and what to do next.
 */
export function completionMessage(news: CompletionNews): string {
  const { completion } = news;
  const sections = news.reportMarkdown ? parseReportSections(news.reportMarkdown) : undefined;
  const lines = [`gstack dispatch ${completion.dispatch_id} ended: ${completion.status}.`];
  if (news.summary?.trim()) lines.push("", news.summary.trim());
  const shipped = sections ? bulletItems(sections["What shipped"] ?? "") : [];
  if (shipped.length > 0) lines.push("", "What shipped:", ...shipped.map((item) => `- ${item}`));
  const facts: string[] = [];
  if (completion.pr) facts.push(`PR ${completion.pr}`);
  if (completion.commits !== undefined) facts.push(`${completion.commits} commit(s)`);
  if (completion.commit_shas?.length) facts.push(`commits ${completion.commit_shas.join(", ")}`);
  if (completion.branch) facts.push(`branch ${completion.branch}`);
  if (completion.cost_usd !== undefined) {
    facts.push(
      `cost $${completion.cost_usd.toFixed(2)}${completion.budget_usd !== undefined ? ` of a $${completion.budget_usd.toFixed(2)} budget` : ""}`,
    );
  }
  if (facts.length > 0) lines.push("", facts.join("; "));
  if (completion.landing === "awaiting" && completion.branch) {
    lines.push(
      "",
      `The work is on branch ${completion.branch}${completion.base ? ` (from ${completion.base})` : ""}, not in the person's checkout. Only when they say so: gstack_land with dispatch_id ${completion.dispatch_id} and action land (or discard).`,
    );
  }
  const judgment =
    news.needsJudgment ?? (sections ? bulletItems(sections["Needs human judgment"] ?? "") : []);
  const realJudgment = judgment.filter((item) => !/^(none|nothing)\.?$/i.test(item.trim()));
  if (realJudgment.length > 0) {
    lines.push("", "Needs human judgment:", ...realJudgment.map((item) => `- ${item}`));
  }
  if (completion.status !== "completed") {
    const kind = completion.error_kind ?? "unknown";
    lines.push(
      "",
      `Error (${kind}): ${completion.error ?? "no detail"}. What to do: ${WHAT_TO_DO[kind] ?? WHAT_TO_DO.unknown}`,
    );
  }
  lines.push("", `The full report: gstack_report with dispatch_id ${completion.dispatch_id}.`);
  return lines.join("\n");
}
