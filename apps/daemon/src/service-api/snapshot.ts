import { readFile } from "node:fs/promises";
import {
  type Completion,
  type DispatchSnapshot,
  type GstackLayout,
  parseJson,
  parseValue,
} from "@gstack/contracts";
import {
  commitsSince,
  readState,
  runBaseSha,
  type SessionState,
  totalSpent,
  workDir,
} from "@gstack/daemon-client";

/** Where a snapshot is read from: the runner's live sessions first, then the files. */
export interface SnapshotSources {
  layout: GstackLayout;
  now(): Date;
  /** The live session's state, when the runner holds the dispatch. */
  live(id: string): SessionState | undefined;
  /** Its place in the queue (1 is next), when it is waiting for a slot. */
  position(id: string): number | undefined;
  /** True when the dispatch is still in `dispatch/` or being claimed. */
  isWaiting(id: string): Promise<boolean>;
}

/**
 * One dispatch right now, as `check-status` and `get-completion` answer it; undefined when
 * nobody knows the id. A finished dispatch is read from its completion JSON, which is written
 * whole before anything else learns of the end, so `terminal` is never true early. `run` holds
 * only what the current attempt made.
 */
export async function dispatchSnapshot(
  sources: SnapshotSources,
  id: string,
  options: { report: boolean },
): Promise<DispatchSnapshot | undefined> {
  const { layout } = sources;
  const report = await readCompletion(layout, id);
  if (report) return terminalSnapshot(layout, report, options);
  // The live state changes as the run goes on: the answer is built from a copy taken now, so
  // a run that ends while commits are counted cannot give it a status it never had at once.
  const live = sources.live(id);
  const state = live
    ? { ...live, ...(live.progress ? { progress: { ...live.progress } } : {}) }
    : await readState(layout, id);
  if (state) return liveSnapshot(sources, state);
  if (await sources.isWaiting(id)) {
    return parseValue("dispatch-snapshot", {
      dispatch_id: id,
      status: "pending",
      terminal: false,
      message: "not taken yet: the daemon is checking it",
    });
  }
  return undefined;
}

async function readCompletion(layout: GstackLayout, id: string): Promise<Completion | undefined> {
  const path = layout.dispatch.completedJson(id);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  return parseJson("completion", text, { source: path });
}

async function terminalSnapshot(
  layout: GstackLayout,
  report: Completion,
  options: { report: boolean },
): Promise<DispatchSnapshot> {
  const attempt = report.attempt ?? (report.retries ?? 0) + 1;
  const all = report.commit_shas ?? [];
  // Reports of a first attempt need no split; a later attempt's report says what it made.
  const mine = report.run_commit_shas ?? (attempt === 1 ? all : undefined);
  const earlier = mine ? all.filter((sha) => !mine.includes(sha)) : [];
  let markdown: string | undefined;
  if (options.report) {
    markdown = await readFile(layout.dispatch.completedReport(report.dispatch_id), "utf8").catch(
      () => undefined,
    );
  }
  return parseValue("dispatch-snapshot", {
    dispatch_id: report.dispatch_id,
    status: report.status,
    terminal: true,
    message: endedMessage(report),
    ...(report.project ? { project: report.project } : {}),
    ...(report.agent ? { agent: report.agent } : {}),
    ...(report.branch ? { branch: report.branch } : {}),
    // The worktree is there until the work is landed or discarded.
    ...(report.worktree && (report.landing === "awaiting" || report.landing === "nothing")
      ? { worktree: report.worktree }
      : {}),
    attempt,
    ...(report.started_at ? { started_at: report.started_at } : {}),
    ...(report.finished_at ? { finished_at: report.finished_at } : {}),
    elapsed: report.duration,
    ...(mine
      ? {
          run: {
            attempt,
            commit_shas: mine,
            artifacts: runArtifacts(report.artifacts ?? [], all, mine),
          },
        }
      : {}),
    ...(earlier.length > 0 ? { earlier_runs: { attempts: attempt - 1, commit_shas: earlier } } : {}),
    ...(options.report ? { report } : {}),
    ...(options.report && markdown !== undefined ? { report_markdown: markdown } : {}),
  });
}

/** The artifacts of one run: its own commits, and what is not a commit (learnings, a PR). */
function runArtifacts(artifacts: string[], all: string[], mine: string[]): string[] {
  return artifacts.filter((artifact) => {
    if (!artifact.startsWith("commit:")) return true;
    const short = artifact.slice("commit:".length);
    const sha = all.find((candidate) => candidate.startsWith(short));
    return sha === undefined || mine.includes(sha);
  });
}

function endedMessage(report: Completion): string {
  const took = `after ${report.duration} s`;
  if (report.status === "completed") {
    return `completed ${took}${report.commits ? ` with ${report.commits} commit(s)` : ""}`;
  }
  return `${report.status} ${took}${report.error ? `: ${report.error.split("\n")[0]?.slice(0, 200)}` : ""}`;
}

async function liveSnapshot(sources: SnapshotSources, state: SessionState): Promise<DispatchSnapshot> {
  const now = sources.now().getTime();
  const base = {
    dispatch_id: state.id,
    terminal: false,
    project: state.project,
    agent: state.agent,
    ...(state.branch ? { branch: state.branch } : {}),
    ...(state.worktree ? { worktree: state.worktree.path } : {}),
    attempt: state.attempt,
    queued_at: state.queued_at,
    ...(state.started_at ? { started_at: state.started_at } : {}),
  };
  const since = state.started_at ?? state.queued_at;
  const elapsed = Math.max(0, Math.round((now - new Date(since).getTime()) / 1000));
  if (state.status === "queued" || state.status === "finished") {
    // `finished` without a completion JSON is the moment between the two writes of the end:
    // still not a result.
    const position = sources.position(state.id);
    return parseValue("dispatch-snapshot", {
      ...base,
      status: state.status === "finished" ? "running" : "queued",
      message:
        state.status === "finished"
          ? "finishing: the report is being written"
          : `queued${position ? ` at position ${position}` : ""}`,
      ...(position ? { position } : {}),
      elapsed,
    });
  }
  if (state.status === "awaiting" && state.awaiting) {
    const { answer: _answer, session_id: _session, ...awaiting } = state.awaiting;
    return parseValue("dispatch-snapshot", {
      ...base,
      status: "awaiting",
      message: `waiting for an answer to its ${awaiting.kind} (round ${awaiting.round}) until ${awaiting.expires_at}: ${awaiting.how_to_answer}`,
      elapsed,
      awaiting,
    });
  }
  const run = runBaseSha(state);
  const runCommits = run.known && state.started_at ? await commitsSince(workDir(state), run.sha) : undefined;
  const earlier =
    state.attempt > 1 && runCommits && state.started_at
      ? (await commitsSince(workDir(state), state.base_sha)).filter(
          (commit) => !runCommits.some((mine) => mine.sha === commit.sha),
        )
      : [];
  const progress = state.progress;
  const turns = progress?.turns ?? 0;
  const spent = totalSpent(state.spent_usd, progress?.costUsd);
  return parseValue("dispatch-snapshot", {
    ...base,
    status: state.status,
    message: `still ${state.status}${state.attempt > 1 ? ` (attempt ${state.attempt})` : ""}: turn ${turns}${progress?.lastAction ? `, last ${progress.lastAction.slice(0, 120)}` : ""}`,
    elapsed,
    progress: {
      turns,
      tool_uses: progress?.toolUses ?? 0,
      ...(progress?.lastAction ? { last_action: progress.lastAction } : {}),
      ...(spent !== undefined ? { cost_usd: spent } : {}),
      ...(state.budget_usd !== undefined ? { budget_usd: state.budget_usd } : {}),
    },
    ...(runCommits
      ? {
          run: {
            attempt: state.attempt,
            commit_shas: runCommits.map((commit) => commit.sha),
            artifacts: runCommits.map((commit) => `commit:${commit.sha.slice(0, 12)}`),
          },
        }
      : {}),
    ...(earlier.length > 0
      ? { earlier_runs: { attempts: state.attempt - 1, commit_shas: earlier.map((commit) => commit.sha) } }
      : {}),
  });
}
