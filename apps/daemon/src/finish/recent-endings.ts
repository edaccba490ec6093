import { statSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { type Completion, type GstackLayout, parseValue } from "@gstack/contracts";

/** A dispatch that ended, as `status` lists it. */
export interface Ending {
  completion: Completion;
  /** When it ended: the report's `finished_at`, else the file's modification time. */
  endedAt: Date;
}

/** The `count` most recent completion reports in `dispatch/completed/`, newest first; unreadable ones are skipped. */
export async function recentEndings(layout: GstackLayout, count = 5): Promise<Ending[]> {
  const folder = layout.dispatch.completed;
  const names = (await readdir(folder).catch(() => [] as string[])).filter((name) => name.endsWith(".json"));
  // Stat synchronously: hundreds of reports cost a few milliseconds so, many times that as
  // many trips through the thread pool.
  const dated = names.map((name) => {
    try {
      return { name, modified: statSync(join(folder, name)).mtime };
    } catch {
      return { name, modified: undefined };
    }
  });
  // Newest files first; only the few shown are read and parsed.
  dated.sort((a, b) => (b.modified?.getTime() ?? 0) - (a.modified?.getTime() ?? 0));
  const endings: Ending[] = [];
  for (const { name, modified } of dated.slice(0, count * 2)) {
    try {
      const path = join(folder, name);
      const completion = parseValue("completion", JSON.parse(await readFile(path, "utf8")), { source: path });
      const finished = completion.finished_at ? new Date(completion.finished_at) : undefined;
      endings.push({
        completion,
        endedAt: finished && !Number.isNaN(finished.getTime()) ? finished : (modified ?? new Date(0)),
      });
    } catch {}
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
