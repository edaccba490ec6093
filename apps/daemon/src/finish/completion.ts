import { open, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  type ActivityEntry,
  type AuditEventName,
  appendJsonLines,
  type Completion,
  type CompletionStatus,
  type Dispatch,
  type FailureKind,
  type GstackLayout,
  isoWeekOf,
  type Learning,
  parseValue,
  writeFileAtomic,
} from "@gstack/contracts";
import { parse as parseYaml } from "yaml";
import type { CompletionDelivery } from "../deliver/completion-delivery";
import { commitsSince } from "../git";
import { gstackRunOf } from "../gstack-run/gstack-run-of";
import type { AgentFailure, AgentRunResult } from "../run/agent-types";
import { describeJump } from "../run/clock";
import {
  ensurePrivateFile,
  PRIVATE,
  runBaseSha,
  type SessionState,
  spawnNumber,
  workDir,
  writeState,
} from "../session-state";
import { totalSpent } from "../spend/spend";
import { commitsToLand, filesChanged, measureWorktree, submodulesNote } from "../worktree/worktree";
import { extractLearnings } from "./learnings";
import { bulletItems, completeSections, describeUsage, parseReportSections, renderReport } from "./report";

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
}

/**
 * The steps of finishing, in order. The plan file is the commit point: once it exists the
 * outcome is fixed, and a restart carries out the remaining steps from it.
 *
 * | crash after        | on restart                                                  |
 * |--------------------|-------------------------------------------------------------|
 * | (before `plan`)    | the run was interrupted: it is queued again (next attempt)  |
 * | `plan`             | every step is carried out from the plan                     |
 * | `report`           | the report is rewritten with the same bytes                 |
 * | `learnings`        | learnings of this dispatch already in the file are skipped  |
 * | `learnings-audit`  | `learnings_recorded` already logged is not logged again     |
 * | `activity`         | an activity line of this dispatch already there is skipped  |
 * | `activity-audit`   | `activity_recorded` already logged is not logged again      |
 * | `audit`            | a terminal audit event already logged is not logged again   |
 * | `archive`          | the dispatch file is already in the session folder          |
 * | `completion-json`  | `completed/{id}.json` is rewritten with the same bytes      |
 * | `delivery`         | `enqueue` again: durable and idempotent by contract         |
 * | `finished`         | nothing: state.json says finished, the plan file is removed |
 */
export const COMPLETION_STEPS = [
  "plan",
  "report",
  "learnings",
  "learnings-audit",
  "activity",
  "activity-audit",
  "audit",
  "archive",
  "completion-json",
  "delivery",
  "finished",
] as const;
export type CompletionStepName = (typeof COMPLETION_STEPS)[number];

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
  // A branch with no commits beyond its base has nothing to land: it is never offered for it.
  const toLand = tree ? await commitsToLand(tree) : undefined;
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
  return assemblePlan(state, dispatch, completion, reportMarkdown, learnings);
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

/** What the completion step needs from the daemon. */
export interface CompletionStepContext {
  layout: GstackLayout;
  delivery: CompletionDelivery;
  audit(
    event: AuditEventName,
    fields: { dispatch_id?: string; reason?: string; detail?: Record<string, unknown> },
  ): Promise<void>;
  log(line: string): void;
  /** Brings a project's learnings into the OpenClaw memory; idempotent. */
  shareLearnings(dispatchId: string, project: string): Promise<void>;
  /** Called before each step, with the step's name; a test's way to crash at an exact point. */
  beforeStep?: (step: CompletionStepName, id: string) => void | Promise<void>;
}

/**
 * Carries out a completion: report, learnings, activity, audit, archive, completion JSON,
 * delivery, in that order, each exactly once even across crashes (see {@link COMPLETION_STEPS}).
 * `resumed` is true when the plan was read back after a restart: appends then check for
 * their own earlier line first.
 */
export async function carryOutCompletion(
  context: CompletionStepContext,
  state: SessionState,
  dispatch: Dispatch,
  plan: CompletionPlan,
  resumed: boolean,
): Promise<void> {
  const { layout } = context;
  const id = plan.id;
  const step = async (name: CompletionStepName) => context.beforeStep?.(name, id);
  const sessionDir = layout.dispatch.sessionDir(id);
  if (!resumed) {
    await step("plan");
    await writeFileAtomic(planPath(layout, id), `${JSON.stringify(plan)}\n`, PRIVATE);
  }
  await step("report");
  await writeFileAtomic(layout.dispatch.completedReport(id), plan.reportMarkdown, PRIVATE);
  await step("learnings");
  if (plan.learnings.length > 0) {
    const path = layout.project(dispatch.project).learnings;
    const origin = `"origin":"dispatch:${id}"`;
    if (!(resumed && (await fileContains(path, origin)))) {
      await ensurePrivateFile(path);
      await appendJsonLines(path, plan.learnings);
    }
    // Its own step: a crash between the lines and their event leaves the event to the restart.
    await step("learnings-audit");
    if (!(resumed && (await auditHas(layout.dispatch.audit, "learnings_recorded", id)))) {
      await context.audit("learnings_recorded", {
        dispatch_id: id,
        detail: { count: plan.learnings.length, project: dispatch.project },
      });
    }
    await context.shareLearnings(id, dispatch.project);
  }
  await step("activity");
  const activityPath = layout.activity.week(isoWeekOf(new Date(plan.activity.ts)));
  if (!(resumed && (await fileContains(activityPath, `"dispatch_id":"${id}"`)))) {
    await ensurePrivateFile(activityPath);
    await appendJsonLines(activityPath, [plan.activity]);
  }
  await step("activity-audit");
  if (!(resumed && (await auditHas(layout.dispatch.audit, "activity_recorded", id)))) {
    await context.audit("activity_recorded", { dispatch_id: id });
  }
  await step("audit");
  if (!(resumed && (await auditHas(layout.dispatch.audit, plan.audit.event, id)))) {
    await context.audit(plan.audit.event, {
      dispatch_id: id,
      ...(plan.audit.reason ? { reason: plan.audit.reason } : {}),
      detail: { ...plan.audit.detail, ...(resumed ? { resumed: true } : {}) },
    });
  }
  await step("archive");
  const archived = join(sessionDir, "dispatch.json");
  if (state.claimed_file !== archived) {
    try {
      await rename(state.claimed_file, archived);
    } catch {}
    state.claimed_file = archived;
  }
  // Measured once, now that nothing writes the worktree any more, so `status` walks no files;
  // before the report appears, so the state is finished soon after it.
  const measure = state.worktree ? await measureWorktree(state.worktree) : undefined;
  await step("completion-json");
  await writeFileAtomic(
    layout.dispatch.completedJson(id),
    `${JSON.stringify(plan.completion, null, 2)}\n`,
    PRIVATE,
  );
  context.log(`${plan.summary} → ${layout.dispatch.completedReport(id)}`);
  await step("delivery");
  await context.delivery.enqueue({
    sessionDir,
    dispatch,
    completion: plan.completion,
    reportMarkdown: plan.reportMarkdown,
  });
  await step("finished");
  if (measure) state.worktree_measure = measure;
  else delete state.worktree_measure;
  state.status = "finished";
  state.outcome = plan.completion.status;
  delete state.pid;
  delete state.pgid;
  state.updated_at = plan.completion.finished_at ?? new Date().toISOString();
  await writeState(layout, state);
  await rm(planPath(layout, id), { force: true });
}

async function fileContains(path: string, needle: string): Promise<boolean> {
  try {
    return (await readFile(path, "utf8")).includes(needle);
  } catch {
    return false;
  }
}

async function auditHas(path: string, event: AuditEventName, id: string): Promise<boolean> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return false;
  }
  for (const line of text.split("\n")) {
    if (!line.includes(id)) continue;
    try {
      const entry = JSON.parse(line) as { event?: string; dispatch_id?: string };
      if (entry.event === event && entry.dispatch_id === id) return true;
    } catch {}
  }
  return false;
}

/** The non-JSON lines of the last 64 KiB of an agent's kept output. */
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

/**
 * The terminal status in a completion JSON: undefined when there is no such file, `{}` when it
 * cannot be read as one.
 */
export async function readCompletionStatus(path: string): Promise<{ status?: CompletionStatus } | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  try {
    const status = (JSON.parse(text) as { status?: unknown }).status;
    return typeof status === "string" ? { status: status as CompletionStatus } : {};
  } catch {
    return {};
  }
}
