import type { AwaitingNotice, Completion } from "@gstack/contracts";
import { bulletItems, parseReportSections } from "@gstack/daemon-client";
import { exampleToken, optionList, optionToken } from "./awaiting-message";
import { landable, stripFrontmatter } from "./completion-message";
import { cutAtBreak } from "./text-cut";

/**
 * The message a person reads on their chat channel when a dispatch needs them or ends: its
 * first words say whether it needs them ("Needs your answer", "Ready to land", "Failed") or is
 * news ("Done"), then what happened in a few lines, then how to reply in plain words. No tool
 * names, no report keys, no JSON; the dispatch named by a short id only. The session's own copy
 * (completion-message.ts, awaiting-message.ts) keeps what the agent needs.
 */

/** What a person message may take when the channel does not say: the smallest common limit (Discord). */
export const PERSON_TEXT_LIMIT = 2000;

/** The few characters of a dispatch id a person can say back: its random tail, else the whole id. */
export function shortId(dispatchId: string): string {
  const tail = /-([0-9a-f]{6,})$/.exec(dispatchId)?.[1];
  return tail ? tail.slice(0, 8) : dispatchId;
}

/** Where the person can read what a shortened message left out. */
const REST_OF_PLAN = "Say “show the whole plan” to read the rest.";
const REST_OF_REPORT = "Say “show the full report” to read the rest.";

export interface PersonAwaitingInput {
  notice: AwaitingNotice;
  /** The task as it was dispatched, when this plugin sent it. */
  task?: string;
  /** The daemon runs on another machine: answers are given there. */
  remote?: boolean;
  /** The dispatch's review page, when this host serves one. */
  link?: string;
  limit?: number;
}

export function personAwaitingMessage(input: PersonAwaitingInput): string {
  const { notice } = input;
  const limit = input.limit ?? PERSON_TEXT_LIMIT;
  const what = subject(notice.project, input.task);
  const round = notice.round > 1 ? ` (round ${notice.round})` : "";
  const head =
    notice.kind === "plan"
      ? `Needs your answer: a plan${round} for ${what}. Nothing was changed yet.`
      : `Needs your answer: gstack stopped at a gate for ${what} and waits for your decisions.`;
  const reply: string[] = [];
  if (input.remote) {
    reply.push(
      `The coding agent runs on another machine; answer there: ${notice.how_to_answer}`,
      `Unanswered, it is cancelled ${whenText(notice.expires_at)}.`,
    );
  } else if (notice.kind === "plan") {
    reply.push(
      "Reply “approve” to carry it out, “revise: …” with what to change, or “reject: …” with why.",
      `Unanswered, it is cancelled ${whenText(notice.expires_at)}.`,
    );
  } else {
    const example = exampleToken(notice.items ?? []);
    reply.push(
      `Reply “all” to take every recommendation, or choose: “${example}”, “all except ${example}”. “reject: …” stops it.`,
      `Unanswered, it is cancelled ${whenText(notice.expires_at)}.`,
    );
  }
  const body =
    notice.kind === "plan"
      ? plainText(notice.summary.trim()) || "(the agent wrote no plan text)"
      : gateLines(notice).join("\n");
  return fit(
    [head, ""],
    body,
    [
      "",
      ...reply,
      ...readLine(
        input.link,
        notice.kind === "plan" ? "Read the plan and answer" : "Read the decisions and answer",
      ),
      `(dispatch ${shortId(notice.dispatch_id)})`,
    ],
    limit,
    REST_OF_PLAN,
  );
}

function gateLines(notice: AwaitingNotice): string[] {
  const items = notice.items ?? [];
  if (items.length === 0) return [plainText(notice.summary.trim())];
  return items.map((item, index) => {
    const options = optionList(item);
    const recommended =
      item.recommended === null
        ? ""
        : item.options.includes(item.recommended)
          ? ` Recommended: ${optionToken(item, item.options.indexOf(item.recommended))}.`
          : ` Recommended: ${item.recommended}.`;
    return `${index + 1}. ${item.title}: ${options}.${recommended}`;
  });
}

export interface PersonCompletionInput {
  completion: Completion;
  summary?: string;
  needsJudgment?: string[];
  reportMarkdown?: string;
  task?: string;
  /** The dispatch's review page, when this host serves one. */
  link?: string;
  /**
   * The daemon runs on another machine (its report came through the signed route and this host
   * has no record of it): the work, its diff and its landing are there, not here.
   */
  remote?: boolean;
  limit?: number;
}

const HEADLINES: Record<string, string> = {
  failed: "Failed",
  cancelled: "Cancelled",
  timeout: "Ran out of time",
};

/** One piece of advice a person can act on, per failure kind. */
const PERSON_ADVICE: Record<string, string> = {
  rate_limit: "The model provider limited requests. Try again later.",
  context_overflow: "The task did not fit the model's context. Split it into smaller tasks.",
  tool_failure: "A tool the agent needed failed. Ask for the full report, fix the cause, then try again.",
  logic_error: "The agent could not do it as asked. Rephrase or narrow the task.",
  auth: "The coding agent is not signed in, or its key is invalid. Sign it in on the machine it runs on.",
  spawn_error: "The coding agent could not start. Check it is installed on the machine it runs on.",
  agent_crashed: "The coding agent crashed. Update or reinstall it on the machine it runs on.",
  timeout: "It ran past its time limit. Split the task, or give it more time.",
  cancelled: "Nothing more will happen unless you ask for it again.",
  budget_exhausted: "It spent its budget. Try again with a higher budget or a narrower task.",
  unknown: "Ask for the full report to see what happened.",
};

export function personCompletionMessage(input: PersonCompletionInput): string {
  const { completion } = input;
  const limit = input.limit ?? PERSON_TEXT_LIMIT;
  const markdown = input.reportMarkdown ? stripFrontmatter(input.reportMarkdown) : undefined;
  const sections = markdown ? parseReportSections(markdown) : undefined;
  const what = subject(completion.project, input.task ?? reportTitle(markdown));
  const canLand = landable(completion);
  const headline =
    completion.status === "completed"
      ? canLand
        ? "Ready to land"
        : "Done"
      : (HEADLINES[completion.status] ?? "Ended");
  const head = [`${headline}: ${what}.`];

  const body: string[] = [];
  const summary = input.summary?.trim();
  if (summary) body.push(plainText(summary));
  const shipped = sections ? bulletItems(sections["What shipped"] ?? "") : [];
  if (completion.status === "completed" && shipped.length > 0) {
    body.push(["What shipped:", ...shipped.map((item) => `- ${plainText(item)}`)].join("\n"));
  }
  if (completion.status !== "completed") {
    const kind = completion.error_kind ?? "unknown";
    const error = errorText(completion.error);
    const cancelled = completion.status === "cancelled";
    if (error && !(cancelled && /cancel/i.test(error) && error.length < 80))
      body.push(`What happened: ${error}`);
    body.push(PERSON_ADVICE[kind] ?? (PERSON_ADVICE.unknown as string));
  }
  body.push(factsLine(completion));
  const judgment = (
    input.needsJudgment ?? (sections ? bulletItems(sections["Needs human judgment"] ?? "") : [])
  )
    .map(plainText)
    .filter((item) => !isDaemonEcho(item, completion) && !/^(none|nothing( flagged)?)\.?$/i.test(item));
  if (judgment.length > 0)
    body.push(["Needs your judgment:", ...judgment.map((item) => `- ${item}`)].join("\n"));

  const reply: string[] = [];
  if (input.remote) {
    // Neither the page nor gstack_land reaches that machine: say where the work is read and landed.
    const id = completion.dispatch_id;
    if (canLand || (completion.commits ?? 0) > 0)
      reply.push(
        `The work is on the machine the coding agent ran on${completion.branch ? `, on ${completion.branch}` : ""}: read it there (${completion.base && completion.branch ? `git diff ${completion.base}...${completion.branch}` : `gstack-dispatch logs ${id}`}) and land it there: gstack-dispatch land ${id}, or gstack-dispatch discard ${id}.`,
      );
    else
      reply.push(`The coding agent ran on another machine: its log is there (gstack-dispatch logs ${id}).`);
  } else if (canLand) {
    const base = completion.base ? ` into ${completion.base}` : "";
    const before = completion.status === "completed" ? "" : "Its commits are kept on their branch. ";
    reply.push(`${before}Reply “land” to bring the work${base}, “open a PR”, or “discard”.`);
  }
  return fit(
    [...head, ""],
    body.join("\n\n"),
    [
      "",
      ...reply,
      ...readLine(
        input.remote ? undefined : input.link,
        canLand ? "Read the change and land it" : "Read the report",
      ),
      `(dispatch ${shortId(completion.dispatch_id)})`,
    ],
    limit,
    REST_OF_REPORT,
  );
}

/** The line that links to the dispatch's review page, when there is one. */
function readLine(link: string | undefined, words: string): string[] {
  return link ? [`${words}: ${link}`] : [];
}

/** Branch, commits, time and spend in one line, as a person reads them. */
function factsLine(completion: Completion): string {
  const facts: string[] = [];
  const commits = completion.commits ?? 0;
  if (completion.pr) facts.push(`PR ${completion.pr}`);
  if (completion.landing === "in_place") facts.push(`${plural(commits, "commit")} in your checkout`);
  else if (completion.branch && commits > 0) {
    // The branch the daemon names after the dispatch is "its own"; a branch the person chose is named.
    const own = completion.branch === `gstack/${completion.dispatch_id}`;
    facts.push(`${plural(commits, "commit")} on ${own ? "its own branch" : completion.branch}`);
  } else if (completion.commits !== undefined) facts.push("nothing committed");
  if (completion.landing === "landed") facts.push("landed");
  if (completion.landing === "discarded") facts.push("discarded");
  facts.push(durationText(completion.duration));
  if (completion.cost_usd !== undefined) {
    facts.push(
      `$${completion.cost_usd.toFixed(2)}${completion.budget_usd !== undefined ? ` of $${completion.budget_usd.toFixed(2)}` : ""}`,
    );
  }
  const capitalised = facts.join(" · ");
  return capitalised.charAt(0).toUpperCase() + capitalised.slice(1);
}

/** "3 min 20 s", "45 s", "1 h 2 min". */
export function durationText(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return seconds % 60 ? `${minutes} min ${seconds % 60} s` : `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

/** The project and task a message is about, as few words as say it. */
function subject(project: string | undefined, task: string | undefined): string {
  const title = task ? firstLine(plainText(task), 100) : undefined;
  if (project && title) return `${project}, “${title}”`;
  return project ?? (title ? `“${title}”` : "your dispatch");
}

function reportTitle(markdown: string | undefined): string | undefined {
  return markdown ? /^#\s+(.+)$/m.exec(markdown)?.[1]?.trim() : undefined;
}

function firstLine(text: string, max: number): string {
  const line = text.split(/\r?\n/)[0]?.trim() ?? "";
  return line.length > max ? `${line.slice(0, max - 1).trimEnd()}…` : line;
}

/**
 * An error as a person reads it: its first line, without the daemon's internal addresses
 * (loopback URLs and ports), at most 240 characters, cut at a word with an ellipsis.
 */
export function errorText(error: string | undefined): string | undefined {
  if (!error?.trim()) return undefined;
  const line = (error.trim().split(/\r?\n/)[0] ?? "")
    .replace(/\bhttps?:\/\/(?:127\.\d+\.\d+\.\d+|localhost|\[::1\])(?::\d+)?[^\s,;)]*/gi, "a local service")
    .replace(/\b(?:127\.\d+\.\d+\.\d+|localhost):\d+\b/gi, "a local service")
    .replace(/\s+/g, " ")
    .replace(/[.\s]+$/, "");
  if (line.length <= 240) return `${line}.`;
  const cut = line.slice(0, 239);
  const atWord = cut.lastIndexOf(" ");
  return `${(atWord > 160 ? cut.slice(0, atWord) : cut).replace(/[\s.,;:]+$/, "")}…`;
}

/** The daemon's own "ended failed (kind): error" judgment line repeats the error: shown once. */
function isDaemonEcho(item: string, completion: Completion): boolean {
  return (
    /^The dispatch ended (failed|cancelled|timeout|completed)\b/.test(item) ||
    (completion.status !== "completed" && /^The agent did not end with the requested report/.test(item))
  );
}

/**
 * Markdown marks taken out (channels that do not render them show them raw): emphasis, code
 * marks, and heading marks (a heading that only says "Plan" goes, the message says so already).
 */
export function plainText(text: string): string {
  return text
    .replace(/^#{1,6}\s+(?:the\s+)?plan:?\s*(?:\r?\n|$)/gim, "")
    .replace(/^#{1,6}\s+(.+?)\s*#*$/gm, "$1:")
    .replace(/\*\*(.+?)\*\*/g, "$1")
    .replace(/(^|[\s(])__(.+?)__(?=[\s).,;:!?]|$)/g, "$1$2")
    .replace(/`([^`\n]+)`/g, "$1");
}

/** A timestamp as a person reads it, in UTC: "on 30 Nov at 02:09 UTC". */
export function whenText(timestamp: string): string {
  const date = new Date(timestamp);
  if (Number.isNaN(date.getTime())) return `at ${timestamp}`;
  const month = date.toLocaleString("en-GB", { month: "short", timeZone: "UTC" });
  const time = `${String(date.getUTCHours()).padStart(2, "0")}:${String(date.getUTCMinutes()).padStart(2, "0")}`;
  return `on ${date.getUTCDate()} ${month} at ${time} UTC`;
}

/**
 * Head, body and foot within `limit` characters: the body is shortened at a line (or word)
 * and says where to read the rest; head and foot are kept whole.
 */
export function fit(head: string[], body: string, foot: string[], limit: number, rest: string): string {
  const whole = [...head, body, ...foot].join("\n");
  if ([...whole].length <= limit) return whole;
  const room = limit - [...[...head, "", ...foot].join("\n")].length - rest.length - 4;
  return [...head, `${cutAtBreak(body, room)} …`, "", rest, ...foot].join("\n");
}
