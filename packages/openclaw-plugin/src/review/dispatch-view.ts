import { execFile } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { AwaitingNotice, Completion, GstackLayout } from "@gstack/contracts";
import type { SessionState } from "@gstack/daemon-client";
import { type DiffFile, parseGitDiff } from "./diff";
import { readTestRuns, type TestRun } from "./test-runs";

const run = promisify(execFile);

/** The largest diff read for a page; a larger one is cut and says so. */
const MAX_DIFF_BYTES = 16 * 1024 * 1024;

export interface TimelineEvent {
  ts: string;
  event: string;
  reason?: string;
}

export interface CommitLine {
  sha: string;
  subject: string;
  author: string;
  date: string;
}

/** What the review page shows of one dispatch, read from the daemon's files and git on this host. */
export interface DispatchView {
  id: string;
  project: string;
  task?: string;
  state?: SessionState;
  notice?: AwaitingNotice;
  completion?: Completion;
  report?: string;
  /** Where the work stands: the daemon's landing record, else the completion's word. */
  landing?: Completion["landing"];
  /** The commit a landing made in the base, when it landed. */
  landedCommit?: string;
  timeline: TimelineEvent[];
  branch?: string;
  base?: string;
  commits: CommitLine[];
  diff: DiffFile[];
  /** Why no diff could be read (no worktree, branch gone), when none could. */
  diffNote?: string;
  diffCut?: boolean;
  /** The tests the agent ran (its stream) or its report names, with what is known of each. */
  tests: TestRun[];
}

async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as T;
  } catch {
    return undefined;
  }
}

/** The daemon's record of a dispatch on this host, or undefined when it has none. */
export async function readSessionState(layout: GstackLayout, id: string): Promise<SessionState | undefined> {
  const state = await readJson<SessionState>(join(layout.dispatch.sessionDir(id), "state.json"));
  return state?.id === id ? state : undefined;
}

export async function readDispatchView(layout: GstackLayout, id: string): Promise<DispatchView | undefined> {
  const state = await readSessionState(layout, id);
  if (!state) return undefined;
  const report = await readFile(layout.dispatch.completedReport(id), "utf8").catch(() => undefined);
  const [notice, completion, timeline, dispatch, landed, tests] = await Promise.all([
    readJson<AwaitingNotice>(layout.dispatch.awaitingJson(id)),
    readJson<Completion>(layout.dispatch.completedJson(id)),
    readTimeline(layout, id),
    readJson<{ task?: unknown }>(state.claimed_file),
    readLandingRecord(layout, id),
    readTestRuns(layout.dispatch.sessionDir(id), report),
  ]);
  const landing = landed?.landing ?? completion?.landing;
  const branch = completion?.branch ?? state.worktree?.branch ?? state.branch;
  const baseSha = completion?.base_sha ?? state.worktree?.base_sha ?? state.base_sha;
  const repo = state.worktree?.repo ?? state.project_dir;
  const view: DispatchView = {
    id,
    project: state.project,
    ...(typeof dispatch?.task === "string" ? { task: dispatch.task } : {}),
    state,
    ...(notice && notice.dispatch_id === id && state.status === "awaiting" ? { notice } : {}),
    ...(completion && completion.dispatch_id === id ? { completion } : {}),
    ...(report ? { report } : {}),
    ...(landing ? { landing } : {}),
    ...(landed?.commit ? { landedCommit: landed.commit } : {}),
    timeline,
    ...(branch ? { branch } : {}),
    ...((completion?.base ?? state.worktree?.base) ? { base: completion?.base ?? state.worktree?.base } : {}),
    commits: [],
    diff: [],
    tests,
  };
  if (!branch || !baseSha) {
    view.diffNote = "No branch yet: the dispatch has not started its work.";
    return view;
  }
  const tip = await gitText(repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}^{commit}`]);
  if (!tip) {
    view.diffNote =
      landing === "discarded"
        ? "The work was discarded: its branch is gone."
        : `The branch ${branch} is not in ${repo}.`;
    return view;
  }
  const range = `${baseSha}..${tip.trim()}`;
  const [log, diff] = await Promise.all([
    gitText(repo, ["log", "--no-color", "--format=%H%x1f%s%x1f%an%x1f%aI", range]),
    gitText(repo, ["-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff", "-M", range], true),
  ]);
  view.commits = (log ?? "")
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [sha = "", subject = "", author = "", date = ""] = line.split("\x1f");
      return { sha, subject, author, date };
    });
  if (diff === undefined) view.diffNote = "The diff could not be read.";
  else {
    view.diffCut = diff.length >= MAX_DIFF_BYTES;
    view.diff = parseGitDiff(diff);
  }
  return view;
}

/** `sessions/{id}/landing.json`: what the daemon's landing reached, once it did. */
async function readLandingRecord(
  layout: GstackLayout,
  id: string,
): Promise<{ landing: "landed" | "pr_opened" | "discarded"; commit?: string } | undefined> {
  const record = await readJson<{ landing?: unknown; commit?: unknown }>(
    join(layout.dispatch.sessionDir(id), "landing.json"),
  );
  if (record?.landing !== "landed" && record?.landing !== "pr_opened" && record?.landing !== "discarded")
    return undefined;
  return {
    landing: record.landing,
    ...(typeof record.commit === "string" ? { commit: record.commit } : {}),
  };
}

async function gitText(cwd: string, args: string[], large = false): Promise<string | undefined> {
  try {
    const { stdout } = await run("git", args, {
      cwd,
      maxBuffer: large ? MAX_DIFF_BYTES : 1024 * 1024,
      encoding: "utf8",
    });
    return stdout;
  } catch (error) {
    // A diff over the limit: what was read is kept and said to be cut.
    const partial = (error as { stdout?: string; code?: string }).stdout;
    if (large && (error as { code?: string }).code === "ERR_CHILD_PROCESS_STDIO_MAXBUFFER" && partial)
      return partial.padEnd(MAX_DIFF_BYTES);
    return undefined;
  }
}

/** This dispatch's lines of the audit log, oldest first. */
async function readTimeline(layout: GstackLayout, id: string): Promise<TimelineEvent[]> {
  const text = await readFile(layout.dispatch.audit, "utf8").catch(() => "");
  const events: TimelineEvent[] = [];
  for (const line of text.split("\n")) {
    if (!line.includes(id)) continue;
    try {
      const event = JSON.parse(line) as {
        ts?: unknown;
        event?: unknown;
        dispatch_id?: unknown;
        reason?: unknown;
      };
      if (event.dispatch_id !== id || typeof event.ts !== "string" || typeof event.event !== "string")
        continue;
      if (event.event === "progress") continue;
      events.push({
        ts: event.ts,
        event: event.event,
        ...(typeof event.reason === "string" ? { reason: event.reason } : {}),
      });
    } catch {
      // A torn last line while the daemon writes: skipped.
    }
  }
  return events;
}

export interface ListedDispatch {
  id: string;
  project: string;
  status: SessionState["status"];
  queuedAt: string;
  costUsd?: number;
  budgetUsd?: number;
  landing?: Completion["landing"];
  outcome?: string;
  waiting: boolean;
}

/** This host's dispatches: those waiting for the person (an answer or a landing) first, newest first within. */
export async function listDispatches(layout: GstackLayout): Promise<ListedDispatch[]> {
  const names = await readdir(layout.dispatch.sessions).catch(() => [] as string[]);
  const listed: ListedDispatch[] = [];
  for (const name of names) {
    const state = await readSessionState(layout, name);
    if (!state) continue;
    const completion = await readJson<Completion>(layout.dispatch.completedJson(name));
    const landing = (await readLandingRecord(layout, name))?.landing ?? completion?.landing;
    const waiting = state.status === "awaiting" || landing === "awaiting";
    const cost = completion?.cost_usd ?? state.progress?.costUsd;
    const budget = completion?.budget_usd ?? state.budget_usd;
    listed.push({
      id: name,
      project: state.project,
      status: state.status,
      queuedAt: state.queued_at,
      ...(cost !== undefined ? { costUsd: cost } : {}),
      ...(budget !== undefined ? { budgetUsd: budget } : {}),
      ...(landing ? { landing } : {}),
      ...(completion?.status ? { outcome: completion.status } : {}),
      waiting,
    });
  }
  return listed.sort((a, b) =>
    a.waiting !== b.waiting ? (a.waiting ? -1 : 1) : b.queuedAt.localeCompare(a.queuedAt),
  );
}
