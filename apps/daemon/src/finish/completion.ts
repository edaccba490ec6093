import { readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  type AuditEventName,
  appendJsonLines,
  type CompletionStatus,
  type Dispatch,
  type GstackLayout,
  isoWeekOf,
  writeFileAtomic,
} from "@gstack/contracts";
import type { CompletionDelivery } from "@gstack/daemon-client";
import {
  ensurePrivateFile,
  measureWorktree,
  PRIVATE,
  type SessionState,
  writeState,
} from "@gstack/daemon-client";
import { type CompletionPlan, planPath } from "./plan-completion";

export {
  type CompletionInput,
  type CompletionPlan,
  planCompletion,
  planFromReport,
  planPath,
  readPlan,
} from "./plan-completion";

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
  // Measured once, now that nothing writes the worktree any more, so `status` walks no files:
  // as the plan was made (see CompletionPlan.measure), else now, before the report appears, so
  // the state is finished soon after it.
  const measure = plan.measure ?? (state.worktree ? await measureWorktree(state.worktree) : undefined);
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
