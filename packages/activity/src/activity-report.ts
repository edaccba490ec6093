import type { ActivityEntry } from "@gstack/contracts";
import type { ActivitySummary, ArtifactSummary, ProjectSummary, SpendSummary } from "./activity-summary";
import { formatDuration } from "./duration-text";
import { renderTable } from "./text-table";

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const WEEKDAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/** `Mon 30 Mar 2026` for a UTC day. */
export function formatDay(date: Date): string {
  return `${WEEKDAYS[date.getUTCDay()]} ${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}`;
}

/** `2026-04-01 10:05` in UTC, the zone the weekly files are cut in. */
export function formatTime(ts: string): string {
  const time = Date.parse(ts);
  if (Number.isNaN(time)) return ts;
  return new Date(time).toISOString().slice(0, 16).replace("T", " ");
}

/** Describes a span `[since, until)` in days: `Mon 30 Mar 2026 – Sun 5 Apr 2026`. */
export function formatSpan(since: Date, until: Date): string {
  const last = new Date(until.getTime() - 1);
  return `${formatDay(since)} – ${formatDay(last)}`;
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? "" : "s"}`;
}

function artifactParts(artifacts: ArtifactSummary): string[] {
  const parts: string[] = [];
  if (artifacts.pullRequests.length > 0) {
    parts.push(
      `${artifacts.pullRequests.length === 1 ? "PR" : "PRs"} ${artifacts.pullRequests.map((id) => (/^\d+$/.test(id) ? `#${id}` : id)).join(", ")}`,
    );
  }
  if (artifacts.commits.length > 0) {
    const shown = artifacts.commits.slice(0, 5).map((id) => id.slice(0, 7));
    parts.push(
      `${plural(artifacts.commits.length, "commit")} (${shown.join(", ")}${artifacts.commits.length > 5 ? ", …" : ""})`,
    );
  }
  if (artifacts.learnings > 0) parts.push(plural(artifacts.learnings, "learning"));
  if (artifacts.other.length > 0) parts.push(artifacts.other.join(", "));
  return parts;
}

/** `$4.20`; under a cent keeps three decimals so a small run does not read as free. */
export function formatUsd(amount: number): string {
  return amount > 0 && amount < 0.01 ? `$${amount.toFixed(3)}` : `$${amount.toFixed(2)}`;
}

/** `$4.20 spent`, with how many entries did not say; undefined when none did. */
function spendText(spend: SpendSummary): string | undefined {
  if (spend.priced === 0) return undefined;
  return `${formatUsd(spend.costUsd)} spent${spend.unpriced > 0 ? ` (${spend.unpriced} without a cost)` : ""}`;
}

function countsText(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort((left, right) => right[1] - left[1] || left[0].localeCompare(right[0]))
    .map(([name, count]) => `${count} ${name}`)
    .join(", ");
}

function projectBlock(project: ProjectSummary): string[] {
  const lines = [
    `${project.project} — ${plural(project.sessions, "session")}, ${formatDuration(project.duration, { round: "minute" })}`,
    `  ${project.skills.map((skill) => `${skill.skill} ×${skill.runs} (${formatDuration(skill.duration, { round: "minute" })})`).join(" · ")}`,
  ];
  const artifacts = artifactParts(project.artifacts);
  if (artifacts.length > 0) lines.push(`  shipped: ${artifacts.join(" · ")}`);
  const details: string[] = [];
  const spent = spendText(project.spend);
  if (spent) details.push(spent);
  if (Object.keys(project.outcomes).length > 0) details.push(`outcomes: ${countsText(project.outcomes)}`);
  if (project.branches.length > 0) details.push(`branches: ${project.branches.join(", ")}`);
  if (Object.keys(project.dispatchers).length > 0) {
    details.push(
      `dispatched by ${Object.entries(project.dispatchers)
        .map(([name, count]) => `${name} ×${count}`)
        .join(", ")}`,
    );
  }
  if (details.length > 0) lines.push(`  ${details.join(" · ")}`);
  return lines;
}

/**
 * Writes a summary as the answer to "what did I ship": a headline with totals, then one
 * short block per project, busiest first. `title` names the span, e.g. `2026-W14 (Mon 30
 * Mar 2026 – Sun 5 Apr 2026)`.
 */
export function formatShipReport(summary: ActivitySummary, title: string): string {
  if (summary.entries === 0) return `Nothing recorded in ${title}.`;
  const headline = [
    plural(summary.sessions, "session"),
    formatDuration(summary.duration, { round: "minute" }),
    plural(summary.projects.length, "project"),
    ...artifactParts(summary.artifacts).slice(0, 2),
    ...(spendText(summary.spend) ? [spendText(summary.spend)] : []),
  ].join(" · ");
  const blocks = summary.projects.map((project) => projectBlock(project).join("\n"));
  const weekly =
    summary.spendByWeek.length > 1
      ? [
          `spend per week: ${summary.spendByWeek.map((week) => `${week.week} ${formatUsd(week.costUsd)}`).join(" · ")}`,
        ]
      : [];
  return [`Shipped in ${title}`, headline, ...weekly, "", blocks.join("\n\n")].join("\n");
}

/** Lists entries as a table, oldest first as given. */
export function formatEntryTable(entries: readonly ActivityEntry[]): string {
  if (entries.length === 0) return "No entries.";
  return renderTable(
    ["time (UTC)", "project", "skill", "duration", "outcome", "branch", "artifacts"],
    entries.map((entry) => [
      formatTime(entry.ts),
      entry.project,
      entry.skill,
      formatDuration(entry.duration),
      entry.outcome ?? "",
      entry.branch ?? "",
      (entry.artifacts ?? []).join(" "),
    ]),
    { alignRight: [3] },
  );
}

/** One line saying when a project (or other filter) was last worked on. */
export function formatLastSeen(what: string, entry: ActivityEntry | undefined, now: Date): string {
  if (!entry) return `No activity recorded for ${what}.`;
  const ago = describeAgo(now.getTime() - Date.parse(entry.ts));
  const details = [
    entry.skill,
    entry.branch ? `on ${entry.branch}` : undefined,
    entry.outcome,
    entry.dispatch ? `dispatched by ${entry.dispatch}` : undefined,
  ].filter(Boolean);
  return `Last worked on ${what} ${ago} (${formatTime(entry.ts)} UTC): ${details.join(", ")}, ${formatDuration(entry.duration, { round: "minute" })}.`;
}

function describeAgo(milliseconds: number): string {
  const minutes = Math.floor(milliseconds / 60_000);
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${plural(minutes, "minute")} ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${plural(hours, "hour")} ago`;
  const days = Math.floor(hours / 24);
  if (days < 14) return `${plural(days, "day")} ago`;
  const weeks = Math.floor(days / 7);
  if (days < 60) return `${plural(weeks, "week")} ago`;
  return `${plural(Math.floor(days / 30), "month")} ago`;
}
