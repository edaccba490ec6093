import { hostname } from "node:os";
import {
  COMPLETION_CALLBACK_TYPE,
  type Completion,
  type CompletionCallback,
  type FailureKind,
  parseValue,
} from "@gstack/contracts";
import { bulletItems, describeSpend, parseReportSections } from "@gstack/daemon-client";

/** OpenClaw's hooks endpoint refuses bodies over 256 KiB (413); messages stay well below. */
export const HOOKS_BODY_LIMIT_BYTES = 256 * 1024;
const MESSAGE_LIMIT_BYTES = 200 * 1024;

/** What a person should do next, for each way a dispatch can fail. */
const NEXT_STEP: Record<FailureKind, string> = {
  rate_limit: "wait until the model's rate limit resets, then dispatch it again",
  context_overflow: "split the task into smaller dispatches",
  tool_failure: "read the report's error and fix the failing tool or command, then dispatch it again",
  logic_error: "read the report; the agent stopped on an error it could not get past",
  auth: "sign the coding agent in as the user the daemon runs as (Claude Code: `claude`, then /login), or put its API key in the service's own environment; `gstack-dispatch doctor` shows where",
  spawn_error: "check that the coding agent is installed and on the daemon's PATH (`gstack-dispatch doctor`)",
  agent_crashed:
    "read the session's stderr in dispatch/sessions/ on the daemon's machine, update or reinstall the agent CLI, then dispatch it again",
  timeout: "split the task or raise dispatch.session_timeout_seconds",
  cancelled: "nothing, unless it should run again",
  unknown: "read the report and the session's stderr on the daemon's machine",
  budget_exhausted:
    "raise the dispatch's budget_usd (or dispatch.default_budget_usd) or narrow the task, then dispatch it again",
};

/** The report's summary ("What shipped") and its "Needs human judgment" items. */
export function reportHighlights(reportMarkdown: string): { summary?: string; needsJudgment: string[] } {
  const sections = parseReportSections(reportMarkdown);
  const summary = sections?.["What shipped"]?.trim();
  return {
    ...(summary ? { summary } : {}),
    needsJudgment: sections ? bulletItems(sections["Needs human judgment"]) : [],
  };
}

/** Bytes a string takes inside a JSON body (escapes included). */
function jsonBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text));
}

function cutToBytes(text: string, limit: number, notice: string): string {
  if (jsonBytes(text) <= limit) return text;
  const characters = [...text];
  const ending = `\n…\n${notice}`;
  let keep = Math.floor((characters.length * (limit - jsonBytes(ending))) / jsonBytes(text));
  for (;;) {
    const candidate = `${characters.slice(0, keep).join("")}${ending}`;
    if (jsonBytes(candidate) <= limit || keep === 0) return candidate;
    keep = Math.floor(keep * 0.9);
  }
}

/**
 * A completion as a message a person (or OpenClaw's agent) can act on: status, summary,
 * commits, PR, every "needs human judgment" item, and for a failure its kind and what to do.
 */
export function completionMessage(
  completion: Completion,
  reportMarkdown: string,
  reportPath: string,
): string {
  const { summary, needsJudgment } = reportHighlights(reportMarkdown);
  const lines: string[] = [];
  const where = [completion.project, completion.agent].filter(Boolean).join(", ");
  lines.push(
    `gstack dispatch ${completion.dispatch_id} ${completion.status}${where ? ` (${where})` : ""} after ${completion.duration} s`,
  );
  const shas = completion.commit_shas?.map((sha) => sha.slice(0, 7)) ?? [];
  lines.push(
    `Commits: ${completion.commits ?? shas.length}${shas.length > 0 ? ` (${shas.join(", ")})` : ""}${completion.branch ? ` on ${completion.branch}` : ""}`,
  );
  if (completion.pr) lines.push(`PR: ${completion.pr}`);
  lines.push(describeSpend(completion.cost_usd, completion.budget_usd));
  if (completion.status !== "completed") {
    const kind = completion.error_kind ?? "unknown";
    const firstLine = completion.error?.split("\n")[0]?.slice(0, 500) ?? "";
    lines.push(`Failure: ${kind}${firstLine ? `: ${firstLine}` : ""}`);
    lines.push(`What to do: ${NEXT_STEP[kind]}`);
  }
  if (needsJudgment.length > 0) {
    lines.push("", "Needs human judgment:", ...needsJudgment.map((item) => `- ${item}`));
  }
  if (summary) lines.push("", "What shipped:", summary);
  lines.push("", `Full report: ${reportPath}`);
  return cutToBytes(lines.join("\n"), MESSAGE_LIMIT_BYTES, `(cut; the full report is ${reportPath})`);
}

/**
 * The body for OpenClaw's hooks endpoint: `/hooks/wake` takes `{text, mode}`, `/hooks/agent`
 * (and mapped hooks) take `{message, name}`. A raw completion JSON would be refused with 400.
 */
export function hooksBody(url: string, message: string): Record<string, unknown> {
  const path = new URL(url).pathname.replace(/\/+$/, "");
  if (path.endsWith("/wake")) return { text: message, mode: "now" };
  return { message, name: "gstack" };
}

/**
 * The signed body for the OpenClaw plugin's gstack receiver: a `completion-callback` with
 * the report's summary and judgment items. Checked against the shared schema before it leaves.
 */
export function completionCallbackBody(
  completion: Completion,
  reportMarkdown: string,
  sentAt: Date,
): CompletionCallback {
  const { summary, needsJudgment } = reportHighlights(reportMarkdown);
  return parseValue("completion-callback", {
    type: COMPLETION_CALLBACK_TYPE,
    dispatch_id: completion.dispatch_id,
    sent_at: sentAt.toISOString(),
    completion,
    ...(summary ? { summary: [...summary].slice(0, 20_000).join("") } : {}),
    ...(needsJudgment.length > 0
      ? { needs_judgment: needsJudgment.map((item) => [...item].slice(0, 4000).join("")) }
      : {}),
    ...(reportMarkdown ? { report_markdown: [...reportMarkdown].slice(0, 200_000).join("") } : {}),
    delivered_by: hostname() || "localhost",
  });
}
