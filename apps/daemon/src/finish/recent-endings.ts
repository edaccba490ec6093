import { type Stats, statSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type Completion, type GstackLayout, parseValue } from "@gstack/contracts";
import {
  type EndingEntry,
  readSummary,
  SETTLED_MS,
  type ShownEnding,
  stampOf,
  writeSummary,
} from "@gstack/daemon-client";

/** A dispatch that ended, as `status` lists it. */
export interface Ending {
  completion: ShownEnding;
  /** When it ended: the report's `finished_at`, else the file's modification time. */
  endedAt: Date;
}

/** What `status` shows of a completion report. */
function shown(completion: Completion): ShownEnding {
  return {
    dispatch_id: completion.dispatch_id,
    status: completion.status,
    ...(completion.project !== undefined ? { project: completion.project } : {}),
    ...(completion.commits !== undefined ? { commits: completion.commits } : {}),
    ...(completion.pr !== undefined ? { pr: completion.pr } : {}),
    ...(completion.error_kind !== undefined ? { error_kind: completion.error_kind } : {}),
    ...(completion.error !== undefined
      ? { error: completion.error.split("\n")[0]?.slice(0, 120) ?? "" }
      : {}),
    ...(completion.finished_at !== undefined ? { finished_at: completion.finished_at } : {}),
  };
}

/**
 * The `count` most recent completion reports in `dispatch/completed/`, newest first; unreadable
 * ones are skipped. Each report is judged by its schema once: what status shows of it (or that it
 * was refused) is kept in the summary of finished sessions with its file's stamp, so a later
 * status reads and checks again only a report that is new or written again.
 */
export async function recentEndings(layout: GstackLayout, count = 5, now = Date.now()): Promise<Ending[]> {
  const folder = layout.dispatch.completed;
  const names = (await readdir(folder).catch(() => [] as string[])).filter((name) => name.endsWith(".json"));
  // Stat synchronously: hundreds of reports cost a few milliseconds so, many times that as
  // many trips through the thread pool.
  const dated: Array<{ name: string; info?: Stats }> = names.map((name) => {
    try {
      return { name, info: statSync(join(folder, name)) };
    } catch {
      return { name };
    }
  });
  // Newest files first; only the few shown are read and parsed.
  dated.sort((a, b) => (b.info?.mtimeMs ?? 0) - (a.info?.mtimeMs ?? 0));
  const known = readSummary(layout).endings ?? {};
  const kept: Record<string, EndingEntry> = {};
  let changed = false;
  const endings: Ending[] = [];
  for (const { name, info } of dated.slice(0, count * 2)) {
    if (!info) continue;
    const stamp = stampOf(info);
    const settled = Math.max(info.mtimeMs, info.ctimeMs) < now - SETTLED_MS;
    const cached = Object.hasOwn(known, name) ? known[name] : undefined;
    let ending: ShownEnding | null;
    if (cached && cached.stamp === stamp && settled) {
      ending = cached.ending;
    } else {
      changed = true;
      try {
        const path = join(folder, name);
        ending = shown(parseValue("completion", JSON.parse(await readFile(path, "utf8")), { source: path }));
      } catch {
        ending = null;
      }
    }
    if (settled) kept[name] = { stamp, ending };
    if (!ending) continue;
    const finished = ending.finished_at ? new Date(ending.finished_at) : undefined;
    endings.push({
      completion: ending,
      endedAt: finished && !Number.isNaN(finished.getTime()) ? finished : info.mtime,
    });
  }
  if (changed || Object.keys(known).some((name) => !Object.hasOwn(kept, name))) {
    writeSummary(layout, { ...readSummary(layout), endings: kept });
  }
  endings.sort((a, b) => b.endedAt.getTime() - a.endedAt.getTime());
  return endings.slice(0, count);
}

function ago(from: Date, now: Date): string {
  const seconds = Math.max(0, Math.round((now.getTime() - from.getTime()) / 1000));
  if (seconds < 90) return `${seconds}s ago`;
  if (seconds < 90 * 60) return `${Math.round(seconds / 60)}m ago`;
  if (seconds < 36 * 3600) return `${Math.round(seconds / 3600)}h ago`;
  return `${Math.round(seconds / 86_400)}d ago`;
}

/** The endings as terminal lines: outcome, id, project, when, and for a failure its kind and first line. */
export function formatEndings(endings: Ending[], now: Date = new Date()): string[] {
  if (endings.length === 0) return [];
  const lines = ["recent endings:"];
  for (const { completion, endedAt } of endings) {
    const mark = completion.status === "completed" ? "✓" : completion.status === "cancelled" ? "–" : "✗";
    const why =
      completion.status === "completed"
        ? `${completion.commits ?? 0} commit(s)${completion.pr ? `, ${completion.pr}` : ""}`
        : `${completion.error_kind ?? completion.status}${completion.error ? `: ${completion.error.split("\n")[0]?.slice(0, 120)}` : ""}`;
    lines.push(
      `  ${mark} ${completion.dispatch_id}  ${completion.project ?? ""}  ${completion.status}  ${ago(endedAt, now)}  ${why}`,
    );
  }
  lines.push("  (gstack-dispatch status <id> for one; the report is in dispatch/completed/<id>.md)");
  return lines;
}
