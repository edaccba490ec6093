import { readFileSync } from "node:fs";
import { mkdir, open, readdir, readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { CompletionStatus, GstackLayout } from "@gstack/contracts";
import { writeFileAtomic } from "@gstack/contracts";
import type { AgentProgress } from "./agent-types";
import type { AwaitingRecord } from "./awaiting-record";
import type { WorktreeMeasure } from "./worktree/measure";
import type { WorktreeRecord } from "./worktree/record";

/** The daemon's state files are its user's alone, whatever the umask. */
export const PRIVATE = { mode: 0o600 } as const;

/**
 * Makes the file at `path` exist, private (0600) with its missing folders private (0700),
 * whatever the umask: for files others append to afterwards (activity, learnings), which would
 * otherwise be made 0644 in folders 0755. A file that exists is left as it is.
 */
export async function ensurePrivateFile(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await (await open(path, "a", 0o600)).close();
}

/** What the daemon keeps about one dispatch in `sessions/{id}/state.json`. */
export interface SessionState {
  id: string;
  project: string;
  project_dir: string;
  /** A built-in agent or one the config names (`targetAgentPattern`). */
  agent: string;
  status: "queued" | "running" | "retrying" | "awaiting" | "finished";
  claimed_file: string;
  first_seen: string;
  queued_at: string;
  started_at?: string;
  /**
   * The attempt being made: 1, then one more for a retry after a failure and for a run started
   * again after the daemon was interrupted; counted across daemon restarts, written before each
   * spawn. A run after a person's answer is a round of the same attempt (see `rounds`).
   */
  attempt: number;
  /** Retries after a retryable failure (at most one). */
  retries: number;
  /**
   * Runs started by a person's answer (an approved or revised plan, a gstack gate reply): rounds
   * of one run, never attempts or retries. Absent while there were none.
   */
  rounds?: number;
  /**
   * How long the dispatch has been running, in milliseconds on the monotonic clock, summed
   * over daemon restarts; counts against `session_timeout_seconds` (a wall clock moved while
   * the daemon was down does not).
   */
  ran_ms?: number;
  /** How far the wall clock jumped while it ran (ms, positive forward), when it did. */
  clock_jump_ms?: number;
  /** How many attempts were cut short by the daemon stopping or crashing. */
  restarts?: number;
  include_learnings: boolean;
  pid?: number;
  pgid?: number;
  base_sha?: string;
  /** Where the current attempt started (HEAD at its spawn), when it is not the first. */
  run?: { attempt: number; base_sha?: string };
  branch?: string;
  /** The dispatch's own worktree, planned (and written here) before it is made. */
  worktree?: WorktreeRecord;
  /**
   * What its worktree held when the dispatch finished, measured once so `status` walks no files:
   * commits to land, bytes on disk, and the tips they were counted against (a moved branch is
   * counted again).
   */
  worktree_measure?: WorktreeMeasure;
  /** Set when the project runs in place, in its own checkout, by the in_place_projects setting. */
  in_place?: boolean;
  progress?: AgentProgress;
  /** The spend cap the dispatch runs under, in US dollars (its own, else the daemon's default). */
  budget_usd?: number;
  /** What attempts before the current one reported spending, in US dollars. */
  spent_usd?: number;
  last_failure?: { kind: string; message: string };
  /**
   * For a dispatch that plans first: `plan` while the agent plans read-only, `execute` once a
   * person approved the plan. Absent for a dispatch that runs at once.
   */
  phase?: "plan" | "execute";
  /** The plan being made: 1, then one more per revision. */
  plan_round?: number;
  /** While it waits for a person (status `awaiting`): what for, and an accepted answer. */
  awaiting?: AwaitingRecord;
  /** The answer the next run continues from, in the agent session that planned. */
  continue_with?: {
    session_id?: string;
    answer:
      | { kind: "approve" }
      | { kind: "revise"; feedback: string }
      | { kind: "reply"; reply: string; gate_rev: number; run_dir: string };
  };
  outcome?: CompletionStatus;
  updated_at: string;
}

/** The persisted FIFO order of queued dispatch ids. */
export interface QueueFile {
  queue: string[];
}

/** The write of each state file in flight, which the next write of that file waits for. */
const stateWrites = new Map<string, Promise<void>>();

/**
 * Writes a dispatch's state as it is now. Writes of one state file land in the order they were
 * asked for: two atomic writes in flight at once may rename in either order (the first one's
 * sync can take longer on a busy disk), which would leave the older state on disk, such as a
 * progress write without the session id a later one carried, with nothing after it to mend it
 * while the agent is quiet. A write that fails fails its own caller only.
 */
export async function writeState(layout: GstackLayout, state: SessionState): Promise<void> {
  const path = join(layout.dispatch.sessionDir(state.id), "state.json");
  const text = `${JSON.stringify(state, null, 2)}\n`;
  const before = stateWrites.get(path);
  const write = (before ?? Promise.resolve())
    .catch(() => undefined)
    .then(() => writeFileAtomic(path, text, PRIVATE));
  stateWrites.set(path, write);
  try {
    await write;
  } finally {
    if (stateWrites.get(path) === write) stateWrites.delete(path);
  }
}

export async function readState(layout: GstackLayout, id: string): Promise<SessionState | undefined> {
  try {
    return JSON.parse(
      await readFile(join(layout.dispatch.sessionDir(id), "state.json"), "utf8"),
    ) as SessionState;
  } catch {
    return undefined;
  }
}

/** Every session state on disk, oldest queued first. */
export async function readAllStates(layout: GstackLayout): Promise<SessionState[]> {
  let names: string[];
  try {
    names = await readdir(layout.dispatch.sessions);
  } catch {
    return [];
  }
  // Read synchronously: `status` reads every state on each call, and hundreds of small files
  // cost a few milliseconds this way, many times that through the thread pool.
  const states: SessionState[] = [];
  for (const name of names) {
    try {
      // A name from the folder's own listing is one plain name: joined without the checks
      // `sessionDir` makes of an id from elsewhere (hundreds of them showed in the time).
      states.push(JSON.parse(readFileSync(join(layout.dispatch.sessions, name, "state.json"), "utf8")));
    } catch {
      // Not a state (yet): a session folder being made, or a torn file.
    }
  }
  // ISO timestamps compare as plain strings; localeCompare sets up a collator (milliseconds).
  return states.sort((a, b) => (a.queued_at < b.queued_at ? -1 : a.queued_at > b.queued_at ? 1 : 0));
}

export async function readQueueFile(layout: GstackLayout): Promise<string[]> {
  try {
    const value = JSON.parse(await readFile(layout.dispatch.queue, "utf8")) as QueueFile;
    return Array.isArray(value.queue) ? value.queue.filter((id) => typeof id === "string") : [];
  } catch {
    return [];
  }
}

export async function writeQueueFile(layout: GstackLayout, ids: readonly string[]): Promise<void> {
  await writeFileAtomic(
    layout.dispatch.queue,
    `${JSON.stringify({ queue: [...ids] } satisfies QueueFile, null, 2)}\n`,
    PRIVATE,
  );
}

/**
 * The commit the current attempt started from: HEAD at its spawn. The first attempt starts
 * where the dispatch started; a later one from what was recorded at its own spawn. Undefined
 * when that is not known (commits of the attempt cannot be told apart from earlier ones).
 */
export function runBaseSha(state: SessionState): { known: boolean; sha?: string } {
  if (state.run && state.run.attempt === state.attempt) {
    return { known: true, ...(state.run.base_sha ? { sha: state.run.base_sha } : {}) };
  }
  if (state.attempt === 1) return { known: true, ...(state.base_sha ? { sha: state.base_sha } : {}) };
  return { known: false };
}

/**
 * Which start of the dispatch's agent this is: 1, then one more for every start, a new attempt or
 * a round after an answer alike. It names the start's `stream-{n}.jsonl` and exit record. (A state
 * written before rounds were counted apart has none; its attempt counted every start.)
 */
export function spawnNumber(state: Pick<SessionState, "attempt" | "rounds">): number {
  return state.attempt + (state.rounds ?? 0);
}

/** Where the agent works and its commits are counted: its worktree, or the project's folder. */
export function workDir(state: SessionState): string {
  return state.worktree?.cwd ?? state.project_dir;
}
