import { open, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type ActivityEntry,
  type AuditEventName,
  type Completion,
  type CompletionStatus,
  type Dispatch,
  type FailureKind,
  type GstackLayout,
  type Learning,
  parseValue,
} from "@gstack/contracts";
import type { AgentFailure, AgentRunResult } from "@gstack/daemon-client";
import {
  bulletItems,
  commitsSince,
  commitsToLand,
  filesChanged,
  measureWorktree,
  parseReportSections,
  runBaseSha,
  type SessionState,
  spawnNumber,
  submodulesNote,
  totalSpent,
  type WorktreeMeasure,
  workDir,
} from "@gstack/daemon-client";
import { parse as parseYaml } from "yaml";
import { describeJump } from "../clock";
import { gstackRunOf } from "../gstack-run/gstack-run-of";
import { extractLearnings } from "./learnings";
import { completeSections, describeUsage, renderReport } from "./report";

/**
 * Everything a finished dispatch leaves behind, decided once and written to
 * `sessions/{id}/finishing.json` before any of it is carried out. Replaying a plan is how a
 * crash inside finishing is recovered: every step below is idempotent given the plan.
 */
export interface CompletionPlan {
  id: string;
  completion: Completion;
  reportMarkdown: string;
  learnings: Learning[];
  activity: ActivityEntry;
  /** The terminal audit event and its fields. */
  audit: { event: AuditEventName; reason?: string; detail: Record<string, unknown> };
  /** One line for the daemon's log. */
  summary: string;
  /**
   * The worktree's size and commits to land, measured as the plan was made (the run has ended:
   * nothing writes the worktree any more). Absent when there is no worktree or git could not
   * tell; a plan written before it was kept here has none either, and finishing measures then.
   */
  measure?: WorktreeMeasure;
}

/** The plan file of a session. */
export function planPath(layout: GstackLayout, id: string): string {
  return join(layout.dispatch.sessionDir(id), "finishing.json");
}

/** Reads a session's completion plan, if finishing had begun. */
export async function readPlan(layout: GstackLayout, id: string): Promise<CompletionPlan | undefined> {
  try {
    return JSON.parse(await readFile(planPath(layout, id), "utf8")) as CompletionPlan;
  } catch {
    return undefined;
  }
}

/** What deciding a completion needs to know about the run. */
export interface CompletionInput {
  layout: GstackLayout;
  state: SessionState;
  dispatch: Dispatch;
  status: CompletionStatus;
  outcome: { result?: AgentRunResult; failure?: AgentFailure };
  finishedAt: Date;
  sessionTimeoutSeconds: number;
  /**
   * Whether to count the commits made since the run's base commit (default true). A repair of a
   * run that ended long ago does not: later commits in the folder are not its own.
   */
  countCommits?: boolean;
}

/**
 * Decides the completion of a run: the completion JSON, the Markdown report, the learnings
 * and the activity entry. Reads git and the kept agent output; writes nothing of its own (a
 * gstack run the agent named is acknowledged in its run.json, once: see `readGstackRun`).
 */
export async function planCompletion(input: CompletionInput): Promise<CompletionPlan> {
  const { layout, state, dispatch, status, outcome, finishedAt } = input;
  const commits =
    state.started_at && input.countCommits !== false
      ? await commitsSince(workDir(state), state.base_sha)
      : [];
  // What the last attempt alone made: a retried or re-run dispatch must not present an
  // earlier attempt's commits as this run's.
  const runBase = runBaseSha(state);
  const runCommits =
    state.attempt === 1
      ? commits
      : runBase.known && state.started_at && input.countCommits !== false
        ? await commitsSince(workDir(state), runBase.sha)
        : undefined;
  const tree = state.worktree;
  // Measured once here (one read of the branch tips, one count) and kept with the plan, so
  // finishing records it without asking git again.
  const measure = tree ? await measureWorktree(tree) : undefined;
  // A branch with no commits beyond its base has nothing to land: it is never offered for it.
  const toLand = tree ? (measure?.commits ?? (await commitsToLand(tree))) : undefined;
  const changed =
    tree && state.started_at && input.countCommits !== false && commits.length > 0
      ? await filesChanged(tree.cwd, tree.base_sha)
      : [];
  const failure =
    outcome.failure ??
    outcome.result?.failure ??
    (status === "timeout"
      ? {
          kind: "timeout" as FailureKind,
          message: `no result within ${input.sessionTimeoutSeconds} s`,
          retryable: false,
          retryWithoutLearnings: false,
        }
      : undefined);
  const progress = outcome.result?.progress ?? state.progress;
  const started = state.started_at ? new Date(state.started_at) : finishedAt;
  const spent = totalSpent(state.spent_usd, progress?.costUsd);
  const gstackRun = await gstackRunOf(outcome.result?.gstackResultLine, {
    cwd: workDir(state),
    consumer: state.id,
    now: finishedAt,
  });
  const completion: Completion = parseValue("completion", {
    dispatch_id: state.id,
    status,
    // With the clock moved meanwhile, the wall times say nothing: the measured run time does.
    duration:
      state.clock_jump_ms !== undefined && state.ran_ms !== undefined
        ? Math.round(state.ran_ms / 1000)
        : Math.max(0, Math.round((finishedAt.getTime() - started.getTime()) / 1000)),
    commits: commits.length,
    ...(status !== "completed" && failure
      ? { error: failure.message.slice(0, 2000), error_kind: failure.kind }
      : {}),
    retries: Math.max(0, state.attempt - 1),
    project: dispatch.project,
    agent: state.agent,
    ...(progress?.sessionId ? { session_id: progress.sessionId } : {}),
    ...(state.started_at ? { started_at: state.started_at } : {}),
    finished_at: finishedAt.toISOString(),
    ...((state.branch ?? dispatch.branch) ? { branch: state.branch ?? dispatch.branch } : {}),
    ...(tree
      ? {
          base: tree.base,
          base_sha: tree.base_sha,
          worktree: tree.path,
          files_changed: changed,
          landing: toLand === 0 ? "nothing" : "awaiting",
        }
      : state.in_place
        ? { landing: "in_place" }
        : {}),
    commit_shas: commits.map((commit) => commit.sha),
    artifacts: commits.map((commit) => `commit:${commit.sha.slice(0, 12)}`),
    attempt: state.attempt,
    ...(runCommits
      ? {
          run_commit_shas: runCommits
            .map((commit) => commit.sha)
            .filter((sha) => commits.some((commit) => commit.sha === sha)),
        }
      : {}),
    ...(progress ? { turns: progress.turns } : {}),
    ...(spent !== undefined ? { cost_usd: spent } : {}),
    ...(state.budget_usd !== undefined ? { budget_usd: state.budget_usd } : {}),
    // The OpenClaw session that asked, so a receiver delivers without a lookup of its own.
    ...(dispatch.reply_to ? { reply_to: dispatch.reply_to } : {}),
    ...(gstackRun ? { gstack_run: gstackRun } : {}),
  });
  let finalText = outcome.result?.result ?? progress?.lastText;
  let parsed = finalText ? parseReportSections(finalText) : undefined;
  if (!parsed) {
    // Agents that print plain text report over many lines; read them back from the kept output.
    const plain = await plainTextTail(
      join(layout.dispatch.sessionDir(state.id), `stream-${spawnNumber(state)}.jsonl`),
    );
    const fromStream = plain ? parseReportSections(plain) : undefined;
    if (fromStream) {
      parsed = fromStream;
      finalText = plain;
    }
  }
  if (!parsed && outcome.result?.outputTail) {
    // The kept output could not be written (a full disk): the tail held in memory has the report.
    const tail = outcome.result.outputTail;
    const plain = plainTextOf(tail, Buffer.byteLength(tail) >= 64 * 1024);
    const fromMemory = plain ? parseReportSections(plain) : undefined;
    if (fromMemory) {
      parsed = fromMemory;
      finalText = plain;
    }
  }
  const learningLines = parsed ? bulletItems(parsed["Learnings logged"]) : [];
  const learnings = extractLearnings(learningLines, { dispatchId: state.id, ts: finishedAt.toISOString() });
  const sections = completeSections(parsed, completion, {
    task: dispatch.task,
    ...(finalText ? { finalText } : {}),
    commitSubjects: commits.map((commit) => `${commit.sha.slice(0, 7)} ${commit.subject}`),
    learningsRecorded: learnings.map((learning) => learning.key),
    ...(outcome.result?.gstackResultLine ? { gstackResultLine: outcome.result.gstackResultLine } : {}),
  });
  if (learnings.length > 0) {
    completion.artifacts = [...(completion.artifacts ?? []), `learnings:${learnings.length}`];
  }
  const notes = [
    attemptsNote(state),
    clockNote(state),
    state.worktree ? submodulesNote(state.worktree) : undefined,
    describeUsage(progress?.usage),
  ]
    .filter(Boolean)
    .join(" ");
  const reportMarkdown = renderReport(completion, sections, dispatch.task, notes || undefined);
  const plan = assemblePlan(state, dispatch, completion, reportMarkdown, learnings);
  return measure ? { ...plan, measure } : plan;
}

/**
 * Rebuilds the plan of a finishing that older code started without a plan file, from the
 * report it wrote first: the completion is the report's frontmatter, the learnings are its
 * "Learnings logged" bullets. Undefined when there is no report or its frontmatter is not a
 * completion of this dispatch.
 */
export async function planFromReport(
  layout: GstackLayout,
  state: SessionState,
  dispatch: Dispatch,
): Promise<CompletionPlan | undefined> {
  let reportMarkdown: string;
  try {
    reportMarkdown = await readFile(layout.dispatch.completedReport(state.id), "utf8");
  } catch {
    return undefined;
  }
  const front = /^---\n([\s\S]*?)\n---\n/.exec(reportMarkdown);
  if (!front?.[1]) return undefined;
  let completion: Completion;
  try {
    completion = parseValue("completion", parseYaml(front[1]));
  } catch {
    return undefined;
  }
  if (completion.dispatch_id !== state.id) return undefined;
  const sections = parseReportSections(reportMarkdown.slice(front[0].length));
  const learnings = extractLearnings(sections ? bulletItems(sections["Learnings logged"]) : [], {
    dispatchId: state.id,
    ts: completion.finished_at ?? state.updated_at,
  });
  return assemblePlan(state, dispatch, completion, reportMarkdown, learnings);
}

/** The activity entry, terminal audit event and log line that go with a completion. */
function assemblePlan(
  state: SessionState,
  dispatch: Dispatch,
  completion: Completion,
  reportMarkdown: string,
  learnings: Learning[],
): CompletionPlan {
  const { status } = completion;
  const activity: ActivityEntry = parseValue("activity-entry", {
    ts: completion.finished_at ?? state.updated_at,
    project: dispatch.project,
    skill: dispatch.task_type ?? "dispatch",
    artifacts: completion.artifacts ?? [],
    duration: completion.duration,
    dispatch: dispatch.dispatched_by,
    dispatch_id: state.id,
    ...(completion.branch ? { branch: completion.branch } : {}),
    outcome: status === "completed" ? "success" : status,
    ...(completion.session_id ? { session: completion.session_id } : {}),
    source: "daemon",
    ...(completion.cost_usd !== undefined ? { cost_usd: completion.cost_usd } : {}),
  });
  const event: AuditEventName =
    status === "completed"
      ? "completed"
      : status === "failed"
        ? "failed"
        : status === "timeout"
          ? "timeout"
          : "cancelled";
  return {
    id: state.id,
    completion,
    reportMarkdown,
    learnings,
    activity,
    audit: {
      event,
      ...(completion.error ? { reason: `${completion.error_kind}: ${completion.error.slice(0, 300)}` } : {}),
      detail: {
        commits: completion.commits,
        duration: completion.duration,
        retries: completion.retries,
        attempts: state.attempt,
        ...(state.rounds ? { rounds: state.rounds } : {}),
        ...(completion.cost_usd !== undefined ? { cost_usd: completion.cost_usd } : {}),
        ...(completion.budget_usd !== undefined ? { budget_usd: completion.budget_usd } : {}),
      },
    },
    summary: `${status} ${state.id} in ${completion.duration} s, ${completion.commits} commit${completion.commits === 1 ? "" : "s"}${completion.error ? ` (${completion.error_kind}: ${completion.error.split("\n")[0]?.slice(0, 120)})` : ""}`,
  };
}

function clockNote(state: SessionState): string | undefined {
  if (state.clock_jump_ms === undefined) return undefined;
  return `The system clock jumped ${describeJump(state.clock_jump_ms)} while this dispatch ran: its start and end times follow the clock, its duration is measured (${Math.round((state.ran_ms ?? 0) / 1000)} s of running).`;
}

function attemptsNote(state: SessionState): string | undefined {
  if (state.attempt <= 1) return undefined;
  const restarts = state.restarts ?? 0;
  return `Ran ${state.attempt} times${restarts > 0 ? ` (${restarts} after the daemon was interrupted)` : ""}.${
    restarts > 0
      ? " The daemon stopped while an attempt ran, before it recorded how that attempt ended, so a run that had already done some or all of the work cannot be ruled out: check for work done twice."
      : ""
  }`;
}

/** The plain-text lines of an output tail (JSON event lines left out); `cut`: its first line is partial. */
function plainTextOf(tail: string, cut: boolean): string | undefined {
  const lines = tail.split("\n");
  if (cut) lines.shift();
  const text = lines
    .filter((line) => !line.trimStart().startsWith("{"))
    .join("\n")
    .trim();
  return text || undefined;
}

/** The non-JSON lines of the last 64 KiB of an agent's kept output. */
async function plainTextTail(path: string): Promise<string | undefined> {
  try {
    const handle = await open(path, "r");
    try {
      const { size } = await handle.stat();
      const length = Math.min(size, 64 * 1024);
      const buffer = Buffer.alloc(length);
      await handle.read(buffer, 0, length, size - length);
      return plainTextOf(buffer.toString("utf8"), size > length);
    } finally {
      await handle.close();
    }
  } catch {
    return undefined;
  }
}
