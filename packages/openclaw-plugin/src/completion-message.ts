import type { Completion } from "@gstack/contracts";
import { bulletItems, parseReportSections } from "@gstack/daemon-client";
import { reportMarker } from "./report-outbox";

/** What a completion message is made of: the report's facts and its Markdown, when known. */
export interface CompletionNews {
  completion: Completion;
  /** The summary a callback carried, when there was one. */
  summary?: string;
  needsJudgment?: string[];
  reportMarkdown?: string;
  /** The task as dispatched, when this plugin sent it. */
  task?: string;
}

/** Whether a completion leaves work the person can land: commits on a branch awaiting their word. */
export function landable(completion: Completion): boolean {
  return completion.landing === "awaiting" && (completion.commits ?? 0) > 0 && Boolean(completion.branch);
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

/** The stable key of one completion: its dispatch and its outcome (status and attempt). */
export function completionKey(completion: Completion): string {
  const attempt = completion.attempt && completion.attempt > 1 ? `:${completion.attempt}` : "";
  return `gstack:${completion.dispatch_id}:${completion.status}${attempt}`;
}

const STATUS_WORDS: Record<string, string> = {
  completed: "finished",
  failed: "failed",
  cancelled: "was cancelled",
  timeout: "ran out of time",
};

/**
 * The text a person and the session's agent read when a dispatch ends: a headline with the
 * status and the task's project, the summary, what shipped, branch, PR and commits, time and
 * cost, every "needs human judgment" item, for a failure its kind and what to do next, how to
 * read the whole report, and last the report's key (by which its delivery is recognised).
 */
export function completionMessage(news: CompletionNews): string {
  const { completion } = news;
  const sections = news.reportMarkdown
    ? parseReportSections(stripFrontmatter(news.reportMarkdown))
    : undefined;
  const where = completion.project ? ` (${completion.project})` : "";
  const lines = [
    `gstack dispatch ${completion.dispatch_id}${where} ${STATUS_WORDS[completion.status] ?? `ended: ${completion.status}`}.`,
  ];
  if (news.summary?.trim()) lines.push("", news.summary.trim());
  const shipped = sections ? bulletItems(sections["What shipped"] ?? "") : [];
  if (shipped.length > 0) lines.push("", "What shipped:", ...shipped.map((item) => `- ${item}`));
  lines.push("", ...completionFacts(completion));
  if (landable(completion)) {
    lines.push(
      "",
      `The work is on branch ${completion.branch}${completion.base ? ` (from ${completion.base})` : ""}, not in the person's checkout. Only on the person's word, once: "land" or "land it" is gstack_land with dispatch_id ${completion.dispatch_id} and action land; "open a PR" is action land with pr true; "discard" is action discard with force true.`,
    );
  }
  if (completion.landing === "nothing" && completion.branch) {
    lines.push(
      "",
      `Nothing to land: branch ${completion.branch} has no commits beyond its base. Only on the person's word: "discard" is gstack_land with dispatch_id ${completion.dispatch_id} and action discard (it removes the worktree and branch).`,
    );
  }
  const judgment =
    news.needsJudgment ?? (sections ? bulletItems(sections["Needs human judgment"] ?? "") : []);
  const realJudgment = judgment.filter((item) => !/^(none|nothing)\.?$/i.test(item.trim()));
  if (realJudgment.length > 0) {
    lines.push("", "Needs your judgment:", ...realJudgment.map((item) => `- ${item}`));
  }
  if (completion.status !== "completed") {
    const kind = completion.error_kind ?? "unknown";
    lines.push(
      "",
      `Error (${kind}): ${completion.error ?? "no detail"}. What to do: ${WHAT_TO_DO[kind] ?? WHAT_TO_DO.unknown}`,
    );
  }
  lines.push(
    "",
    `Full report: gstack_report with dispatch_id ${completion.dispatch_id}.`,
    reportMarker(completionKey(completion)),
  );
  return lines.join("\n");
}

/** Branch, PR, commits, and time, turns and cost of a completion, one fact a line. */
export function completionFacts(completion: Completion): string[] {
  const facts: string[] = [];
  if (completion.branch) facts.push(`Branch: ${completion.branch}`);
  if (completion.pr) facts.push(`PR: ${completion.pr}`);
  if (completion.commits !== undefined) {
    const shas = completion.commit_shas?.length
      ? ` (${completion.commit_shas.map((sha) => sha.slice(0, 7)).join(", ")})`
      : "";
    facts.push(`Commits: ${completion.commits}${shas}`);
  }
  const effort = [`${completion.duration}s`];
  if (completion.turns !== undefined)
    effort.push(`${completion.turns} turn${completion.turns === 1 ? "" : "s"}`);
  if (completion.cost_usd !== undefined) {
    effort.push(
      `$${completion.cost_usd.toFixed(2)}${completion.budget_usd !== undefined ? ` of a $${completion.budget_usd.toFixed(2)} budget` : ""}`,
    );
  }
  facts.push(`Took: ${effort.join(", ")}`);
  return facts;
}

/** A report file's Markdown without its YAML frontmatter. */
export function stripFrontmatter(markdown: string): string {
  const match = /^---\r?\n[\s\S]*?\r?\n---\r?\n?/.exec(markdown);
  return match ? markdown.slice(match[0].length) : markdown;
}
