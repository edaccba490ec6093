import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Awaiting, AwaitingNotice, GstackLayout, ReplyTo } from "@gstack/contracts";
import { writeFileAtomic } from "@gstack/contracts";
import type { AwaitingRecord, GateItem } from "@gstack/daemon-client";
import { optionLetter } from "./gate-reply";

export type { AcceptedAnswer, AwaitingRecord } from "@gstack/daemon-client";

/** How long a dispatch waits for an answer when the config does not say (72 hours). */
export const DEFAULT_AWAITING_EXPIRY_HOURS = 72;

/** The sentence that says how to answer a waiting plan. */
export function howToAnswerPlan(id: string): string {
  return `gstack-dispatch answer ${id} approve | revise "<what to change>" | reject "<why>"`;
}

/** When a wait that begins at `since` expires. */
export function expiryOf(since: Date, hours: number | undefined): Date {
  return new Date(since.getTime() + (hours ?? DEFAULT_AWAITING_EXPIRY_HOURS) * 3_600_000);
}

/** The Markdown a person reads while a dispatch waits: the plan, and what to send. */
export function awaitingMarkdown(id: string, project: string, record: Awaiting): string {
  const title = record.kind === "plan" ? "Plan" : "Decisions";
  const lines = [
    `# ${title} for ${id} (${project})${record.round > 1 ? `, round ${record.round}` : ""}`,
    "",
    record.summary.trim() || "(the agent reported no plan text)",
    "",
    "## How to answer",
    "",
    `\`${record.how_to_answer}\``,
    "",
    record.kind === "plan"
      ? `Approve lets the agent carry the plan out in the same session; revise makes it plan again with your words; reject ends the dispatch cancelled. Unanswered, it ends at ${record.expires_at}.`
      : `Reply in gstack's gate grammar: all (every recommendation), tokens such as d3b (decision d3, option b), or all except d3b; a bare yes or no is refused. The agent resumes its session with your reply. Unanswered, it ends at ${record.expires_at}.`,
  ];
  return `${lines.join("\n")}\n`;
}

/** One command that answers a wait: its words after `gstack-dispatch answer <id>`, and what it does. */
export interface AnswerCommand {
  words: string[];
  does: string;
}

/** What a gate's reply commands need of each pending decision. */
export type GateChoices = Pick<GateItem, "label" | "options" | "recommended">;

/**
 * The answers a person can send to a wait, each an exact command: for a plan approve, revise and
 * reject; for a gstack gate one option for every decision (the recommendation where there is one),
 * `all` when every decision has a recommendation, `all except …` when all but one have, and reject.
 * A gate whose decisions are not known gets reject alone (its `how_to_answer` says the rest).
 */
export function answerCommands(
  record: Pick<Awaiting, "kind">,
  items?: readonly GateChoices[],
): AnswerCommand[] {
  if (record.kind === "plan") {
    return [
      { words: ["approve"], does: "carry the plan out, in the same agent session" },
      { words: ["revise", "<what to change>"], does: "plan again with your words" },
      { words: ["reject", "<why>"], does: "end the dispatch, cancelled" },
    ];
  }
  const reject: AnswerCommand = { words: ["reject", "<why>"], does: "end the dispatch, cancelled" };
  if (!items || items.length === 0) return [reject];
  const recommended = (item: GateChoices) =>
    item.recommended === null ? -1 : item.options.indexOf(item.recommended);
  const commands: AnswerCommand[] = [
    {
      words: items.map((item) => `${item.label}${optionLetter(Math.max(0, recommended(item)))}`),
      does: `one option for each decision (${items
        .map((item) => `${item.label}: ${item.options.map((_, index) => optionLetter(index)).join("/")}`)
        .join(", ")})`,
    },
  ];
  const without = items.filter((item) => recommended(item) < 0);
  if (without.length === 0) commands.push({ words: ["all"], does: "take every recommendation" });
  const other = without.length === 1 ? without[0] : without.length === 0 ? items[0] : undefined;
  const letter = other
    ? other.options.map((_, index) => index).find((index) => index !== recommended(other))
    : undefined;
  if (other && letter !== undefined) {
    commands.push({
      words: ["all", "except", `${other.label}${optionLetter(letter)}`],
      does: `the recommendations, but ${other.label} takes ${optionLetter(letter)}`,
    });
  }
  commands.push(reject);
  return commands;
}

/** A command's words as a shell line: a word with a space or `<`/`>` in double quotes. */
export function answerCommandLine(id: string, round: number, command: AnswerCommand): string {
  const words = command.words.map((word) => (/[\s<>"]/.test(word) ? JSON.stringify(word) : word));
  return `gstack-dispatch answer ${id} ${words.join(" ")} --round ${round}`;
}

/**
 * What a terminal shows of a wait (`logs`, `status <id>`): what it waits for and until when, the
 * plan (or the gate's numbered decisions) in full, and the exact commands that answer it, each with
 * what it does after a `#` (so the line can be pasted into a shell as it is).
 */
export function waitingLines(id: string, record: Awaiting, items?: readonly GateChoices[]): string[] {
  const what = record.kind === "plan" ? "plan" : "gstack gate";
  const commands = answerCommands(record, items).map((command) => ({
    line: answerCommandLine(id, record.round, command),
    does: command.does,
  }));
  const width = Math.max(...commands.map((command) => command.line.length));
  return [
    `${id} waits for your answer to its ${what} (round ${record.round}) until ${record.expires_at}; unanswered, it then ends cancelled.`,
    "",
    ...(record.summary.trim() || "(the agent reported no plan text)").split("\n"),
    "",
    "Answer with one of:",
    ...commands.map((command) => `  ${command.line.padEnd(width)}  # ${command.does}`),
    ...(record.kind === "gate" && (!items || items.length === 0) ? [`  ${record.how_to_answer}`] : []),
  ];
}

/** Where the waiting report of a dispatch is kept. */
export function awaitingReportPath(layout: GstackLayout, id: string): string {
  return join(layout.dispatch.sessionDir(id), "awaiting.md");
}

export async function writeAwaitingReport(
  layout: GstackLayout,
  id: string,
  project: string,
  record: Awaiting,
): Promise<void> {
  await writeFileAtomic(awaitingReportPath(layout, id), awaitingMarkdown(id, project, record), {
    mode: 0o600,
  });
}

/**
 * The waiting notice of one round, for the session that asked: the plan or the gate's items,
 * how to answer, when it ends, and where to post it. The `awaiting-notice` document.
 */
export function awaitingNotice(
  id: string,
  project: string | undefined,
  record: AwaitingRecord,
  replyTo: ReplyTo | undefined,
): AwaitingNotice {
  return {
    dispatch_id: id,
    status: "awaiting",
    ...(project ? { project } : {}),
    kind: record.kind,
    since: record.since,
    expires_at: record.expires_at,
    round: record.round,
    summary: record.summary,
    how_to_answer: record.how_to_answer,
    ...(replyTo ? { reply_to: replyTo } : {}),
    ...(record.gate
      ? {
          items: record.gate.items.map((item) => ({
            label: item.label,
            title: item.title,
            options: item.options,
            recommended: item.recommended,
          })),
        }
      : {}),
  };
}

/**
 * Writes `dispatch/awaiting/{id}.json` (atomically, replacing an earlier round's). Written once
 * the state says the dispatch waits: a reader that checks the state finds it waiting.
 */
export async function writeAwaitingNotice(layout: GstackLayout, notice: AwaitingNotice): Promise<void> {
  await mkdir(layout.dispatch.awaiting, { recursive: true });
  await writeFileAtomic(
    layout.dispatch.awaitingJson(notice.dispatch_id),
    `${JSON.stringify(notice, null, 2)}\n`,
    {
      mode: 0o600,
    },
  );
}

/** Removes a dispatch's waiting notice, if any; a failure to remove it is no error. */
export async function removeAwaitingNotice(layout: GstackLayout, id: string): Promise<void> {
  await rm(layout.dispatch.awaitingJson(id), { force: true }).catch(() => undefined);
}
