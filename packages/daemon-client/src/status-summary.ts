import { readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { GstackLayout } from "@gstack/contracts";
import type { SessionState } from "./session-state";

/*
 * `status` reads every session's state on each call, and finished dispatches pile up (hundreds
 * wait to be landed). What it needs of a finished one is kept in one summary file beside the
 * sessions, `dispatch/.finished-summary.json`, each entry with the stamp of the state file it was
 * taken from (inode, size, modification and change times). A state whose stamp still matches is
 * taken from the summary; any other (new, rewritten, or not finished) is read from its own file,
 * and a session folder that is gone drops out, since only the folder's listing is walked. So the
 * summary can be missing, stale, torn or written by anyone: it can never change what `status`
 * shows, only how many files it reads. Whoever reads it and finds it stale writes it again.
 */

/** What `status` needs of a finished dispatch (a `SessionState` is one). */
export type FinishedState = Pick<
  SessionState,
  "id" | "project" | "status" | "queued_at" | "updated_at" | "worktree_measure"
> & {
  worktree?: Pick<
    NonNullable<SessionState["worktree"]>,
    "repo" | "path" | "cwd" | "branch" | "base" | "base_sha" | "land_into"
  >;
};

/** A finished state as the summary keeps it. */
export type SummarisedState = FinishedState & { status: "finished" };

/** One finished dispatch in the summary, with the stamp of the state file it was taken from. */
export interface SummaryEntry {
  stamp: string;
  state: SummarisedState;
}

/** What `status` shows of a completion report (a `Completion` is one). */
export interface ShownEnding {
  dispatch_id: string;
  status: string;
  project?: string;
  commits?: number;
  pr?: string;
  error_kind?: string;
  error?: string;
  finished_at?: string;
}

/**
 * A completion report as the schema judged it when it was read: what status shows of it, or
 * null for one it refused; with the stamp of the report's file.
 */
export interface EndingEntry {
  stamp: string;
  ending: ShownEnding | null;
}

/** The summary file's contents. */
export interface FinishedSummary {
  version: 1;
  sessions: Record<string, SummaryEntry>;
  /** The newest completion reports in `dispatch/completed/`, by file name. */
  endings?: Record<string, EndingEntry>;
}

/** The summary of a layout's finished sessions. */
export function summaryFile(layout: GstackLayout): string {
  return join(dirname(layout.dispatch.sessions), ".finished-summary.json");
}

/**
 * A state written this recently is read again next time even when its stamp matches: a file
 * rewritten within one tick of the file system's clock, with the same size, could carry an
 * equal stamp (the same reasoning as git's "racily clean" index entries).
 */
export const SETTLED_MS = 2000;

/** The stamp of a file: it changes whenever the file is written again (atomically, by rename). */
export function stampOf(info: { ino: number; size: number; mtimeMs: number; ctimeMs: number }): string {
  return `${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
}

/** The fields of a finished state the summary keeps. */
export function finishedState(state: SessionState | FinishedState): FinishedState {
  const tree = state.worktree;
  return {
    id: state.id,
    project: state.project,
    status: state.status,
    queued_at: state.queued_at,
    updated_at: state.updated_at,
    ...(tree
      ? {
          worktree: {
            repo: tree.repo,
            path: tree.path,
            cwd: tree.cwd,
            branch: tree.branch,
            base: tree.base,
            base_sha: tree.base_sha,
            ...(tree.land_into !== undefined ? { land_into: tree.land_into } : {}),
          },
        }
      : {}),
    ...(state.worktree_measure ? { worktree_measure: state.worktree_measure } : {}),
  };
}

/** The summary on disk, or an empty one when it is missing, unreadable or not a summary. */
export function readSummary(layout: GstackLayout): FinishedSummary {
  try {
    const value: unknown = JSON.parse(readFileSync(summaryFile(layout), "utf8"));
    if (isFinishedSummary(value)) return value;
  } catch {}
  return { version: 1, sessions: {} };
}

/**
 * Every session's state, oldest queued first, as `readAllStates` reads them, except that a
 * finished one whose state file is unchanged since the summary took it comes from the summary
 * (with only the fields `status` uses). Rewrites the summary when it was stale; a summary that
 * cannot be written (a read-only folder, a full disk) only costs the next call the same reads.
 * Synchronous: hundreds of small reads and stats cost far less so than through the thread pool.
 */
export function readStatesWithSummary(
  layout: GstackLayout,
  now = Date.now(),
): Array<SessionState | FinishedState> {
  let names: string[];
  try {
    names = readdirSync(layout.dispatch.sessions);
  } catch {
    return [];
  }
  const known = readSummary(layout).sessions;
  const next = new Map<string, SummaryEntry>();
  let changed = false;
  const states: Array<SessionState | FinishedState> = [];
  for (const name of names) {
    // A name from the folder's own listing is one plain name.
    const file = join(layout.dispatch.sessions, name, "state.json");
    let stamp: string;
    let settled: boolean;
    try {
      const info = statSync(file);
      stamp = stampOf(info);
      settled = Math.max(info.mtimeMs, info.ctimeMs) < now - SETTLED_MS;
    } catch {
      continue; // Not a state (yet): a session folder being made.
    }
    const kept = Object.hasOwn(known, name) ? known[name] : undefined;
    if (kept && kept.stamp === stamp && kept.state.id === name && settled) {
      next.set(name, kept);
      states.push(kept.state);
      continue;
    }
    let state: SessionState;
    try {
      state = JSON.parse(readFileSync(file, "utf8"));
    } catch {
      continue; // A torn file.
    }
    states.push(state);
    if (kept) changed = true;
    if (state.status === "finished" && state.id === name && settled) {
      next.set(name, { stamp, state: { ...finishedState(state), status: "finished" } });
      changed = true;
    }
  }
  if (!changed) {
    for (const name of Object.keys(known)) {
      if (!next.has(name)) {
        changed = true;
        break;
      }
    }
  }
  if (changed) {
    const { endings } = readSummary(layout);
    writeSummary(layout, { version: 1, sessions: Object.fromEntries(next), ...(endings ? { endings } : {}) });
  }
  // ISO timestamps compare as plain strings; localeCompare sets up a collator (milliseconds).
  return states.sort((a, b) => (a.queued_at < b.queued_at ? -1 : a.queued_at > b.queued_at ? 1 : 0));
}

/** Writes the summary whole (a new file renamed over the old), private; failing quietly. */
export function writeSummary(layout: GstackLayout, summary: FinishedSummary): void {
  const path = summaryFile(layout);
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, `${JSON.stringify(summary)}\n`, { mode: 0o600 });
    renameSync(temporary, path);
  } catch {
    try {
      unlinkSync(temporary);
    } catch {}
  }
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);
const isString = (value: unknown): value is string => typeof value === "string";
const optional = (value: unknown, check: (value: unknown) => boolean) => value === undefined || check(value);
const isCount = (value: unknown) =>
  typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= Number.MAX_SAFE_INTEGER;

function isTree(value: unknown): boolean {
  return (
    isObject(value) &&
    isString(value.repo) &&
    isString(value.path) &&
    isString(value.cwd) &&
    isString(value.branch) &&
    isString(value.base) &&
    isString(value.base_sha) &&
    optional(value.land_into, isString)
  );
}

function isMeasure(value: unknown): boolean {
  return (
    isObject(value) &&
    isCount(value.commits) &&
    isCount(value.disk_bytes) &&
    optional(value.tip, isString) &&
    optional(value.into_tip, isString)
  );
}

function isFinishedState(value: unknown): boolean {
  return (
    isObject(value) &&
    isString(value.id) &&
    isString(value.project) &&
    value.status === "finished" &&
    isString(value.queued_at) &&
    isString(value.updated_at) &&
    optional(value.worktree, isTree) &&
    optional(value.worktree_measure, isMeasure)
  );
}

function isEnding(value: unknown): boolean {
  return (
    isObject(value) &&
    isString(value.dispatch_id) &&
    isString(value.status) &&
    optional(value.project, isString) &&
    optional(value.commits, isCount) &&
    optional(value.pr, isString) &&
    optional(value.error_kind, isString) &&
    optional(value.error, isString) &&
    optional(value.finished_at, isString)
  );
}

/**
 * Whether `value` is a summary: the quick check `status` makes on each call, without loading a
 * schema library. It judges exactly as `finishedSummarySchema` (status-summary-schema.ts) does,
 * which a property test holds it to.
 */
export function isFinishedSummary(value: unknown): value is FinishedSummary {
  if (!isObject(value) || value.version !== 1 || !isObject(value.sessions)) return false;
  for (const entry of Object.values(value.sessions)) {
    if (!isObject(entry) || !isString(entry.stamp) || !isFinishedState(entry.state)) return false;
  }
  if (value.endings === undefined) return true;
  if (!isObject(value.endings)) return false;
  for (const entry of Object.values(value.endings)) {
    if (!isObject(entry) || !isString(entry.stamp) || !(entry.ending === null || isEnding(entry.ending))) {
      return false;
    }
  }
  return true;
}
