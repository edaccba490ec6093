import type { Brief, DraftFields, OpenWork, SessionLine } from "./brief-types";

const MINUTE = 60;
const HOUR = 3600;
const DAY = 86_400;

/** An age as people say it: "just now", "5 min", "3 h", "2 days". */
export function ageText(seconds: number): string {
  if (seconds < MINUTE) return "just now";
  if (seconds < HOUR) return `${Math.floor(seconds / MINUTE)} min`;
  if (seconds < DAY) return `${Math.floor(seconds / HOUR)} h`;
  const days = Math.floor(seconds / DAY);
  return days === 1 ? "1 day" : `${days} days`;
}

function ago(ts: string, now: Date): string {
  const seconds = Math.max(0, Math.floor((now.getTime() - Date.parse(ts)) / 1000));
  const age = ageText(seconds);
  return age === "just now" ? age : `${age} ago`;
}

function minutes(seconds: number): string {
  return seconds >= HOUR
    ? `${Math.floor(seconds / HOUR)} h ${Math.round((seconds % HOUR) / MINUTE)} min`
    : `${Math.max(1, Math.round(seconds / MINUTE))} min`;
}

const RUNTIME: Record<SessionLine["runtime"], string> = {
  "claude-code": "in Claude Code",
  daemon: "dispatched",
  openclaw: "from OpenClaw",
  manual: "logged by hand",
};

/** One session in a line: when, what, where, how it ended, what it shipped and cost. */
export function sessionText(session: SessionLine, now: Date): string {
  const parts = [`${session.skill} ${RUNTIME[session.runtime]}`];
  if (session.branch) parts.push(`on ${session.branch}`);
  const facts = [
    session.outcome,
    session.shipped.length > 0 ? `shipped ${session.shipped.join(", ")}` : undefined,
    minutes(session.durationSeconds),
    session.costUsd !== undefined ? `$${session.costUsd.toFixed(2)}` : undefined,
  ].filter((fact): fact is string => fact !== undefined);
  return `${ago(session.ts, now)}: ${parts.join(" ")} (${facts.join(", ")})`;
}

const STATE: Record<OpenWork["state"], string> = {
  queued: "queued",
  running: "running",
  "awaiting-answer": "waits for your answer",
  "awaiting-landing": "finished, not landed",
  "nothing-to-land": "finished with nothing to land",
};

export function openWorkText(work: OpenWork, now: Date): string {
  const age =
    work.ageSeconds !== undefined
      ? ageText(work.ageSeconds)
      : work.since
        ? ageText(Math.max(0, Math.floor((now.getTime() - Date.parse(work.since)) / 1000)))
        : undefined;
  const what =
    work.state === "awaiting-answer" && work.kind ? `${STATE[work.state]} (${work.kind})` : STATE[work.state];
  return `${work.id} ${what}${work.branch ? ` on ${work.branch}` : ""}${age ? `, ${age}` : ""}`;
}

function cut(text: string, length: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length <= length ? flat : `${flat.slice(0, length - 1)}…`;
}

/** The draft in two lines: what it will do, and where, from what, under which budget. */
export function draftText(draft: DraftFields, draftId?: string): string[] {
  const where = [
    `in ${draft.project_dir}`,
    draft.base ? `from ${draft.base}` : undefined,
    draft.branch ? `on ${draft.branch}` : "on a new branch",
    draft.budget_usd !== undefined ? `budget $${draft.budget_usd}` : "no budget cap",
    draft.mode === "plan" ? "plan first" : undefined,
  ].filter(Boolean);
  return [
    `Drafted dispatch${draftId ? ` ${draftId}` : ""} (not sent): ${cut(draft.task, 160)}`,
    `  ${where.join(", ")}. Send it only when the person says so.`,
  ];
}

/**
 * The brief as a few lines of plain text. A project with nothing recorded gets one honest
 * sentence instead of empty headings.
 */
export function formatBrief(brief: Brief, options: { now?: Date; draftId?: string } = {}): string {
  const now = options.now ?? new Date();
  if (brief.project === undefined) {
    return `No brief: ${brief.notes.join("; ") || "no project could be found"}.`;
  }
  if (brief.empty) {
    const lines = [
      `Nothing is recorded for ${brief.project} yet: no sessions, no open work, no checkpoint and no learnings. Say what to work on and it can be dispatched.`,
    ];
    if (brief.notes.length > 0) lines.push(`(${brief.notes.join("; ")})`);
    return lines.join("\n");
  }
  const lines = [`Brief for ${brief.project}${brief.folder ? ` (${brief.folder})` : ""}:`];
  const [last, ...earlier] = brief.sessions;
  lines.push(last ? `Last session ${sessionText(last, now)}.` : "No finished session is recorded.");
  for (const session of earlier) lines.push(`  Before: ${sessionText(session, now)}.`);
  if (brief.openWork === undefined) lines.push("Open work: unknown (the daemon's state was not read).");
  else if (brief.openWork.length === 0) lines.push("Open work: none.");
  else lines.push(`Open work: ${brief.openWork.map((work) => openWorkText(work, now)).join("; ")}.`);
  if (brief.checkpoint) {
    const point = brief.checkpoint;
    lines.push(
      `Newest ${point.kind} (${ago(point.timestamp, now)}${point.branch ? `, ${point.branch}` : ""})${point.title ? `: ${cut(point.title, 100)}` : ""}. Resume prompt: "${cut(point.resumePrompt, 240)}"`,
    );
  } else lines.push("No pending checkpoint or handoff.");
  if (brief.learnings.length > 0) {
    lines.push(
      `Top learnings: ${brief.learnings.map((learning) => `[${learning.confidence}] ${cut(learning.text, 120)}`).join("; ")}.`,
    );
  }
  if (brief.withheld > 0)
    lines.push(`(${brief.withheld} learning(s) withheld: they look like prompt injection.)`);
  if (brief.routing && (brief.routing.skills.length > 0 || brief.routing.load.length > 0)) {
    const advice = [
      brief.routing.skills.length > 0 ? `use ${brief.routing.skills.join(", ")}` : undefined,
      brief.routing.load.length > 0 ? `load ${brief.routing.load.join(", ")}` : undefined,
    ].filter(Boolean);
    lines.push(`Routing: ${advice.join("; ")}.`);
  }
  if (brief.draft) lines.push(...draftText(brief.draft, options.draftId));
  else if (brief.noDraft) lines.push(`No dispatch drafted: ${brief.noDraft}.`);
  if (brief.notes.length > 0) lines.push(`(${brief.notes.join("; ")})`);
  return lines.join("\n");
}
