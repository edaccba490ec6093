import type { CheckpointLine, DraftFields, LearningLine, OpenWork } from "./brief-types";

/** What a draft is made from. */
export interface DraftInput {
  project: string;
  folder?: string;
  checkpoint?: CheckpointLine;
  openWork: readonly OpenWork[];
  learnings: readonly LearningLine[];
  defaultBudgetUsd?: number;
  planFirst: boolean;
}

/**
 * The next dispatch on a project, or why there is none. The task is the newest pending checkpoint's
 * (or handoff's) resume prompt, its worktree starting from the branch that work was on; else the
 * oldest finished dispatch whose branch waits to be landed, carried on from that branch. Work that
 * waits for the person's answer is answered, not dispatched again, so it makes no draft. The budget
 * is the daemon's default, and a project the daemon plans first is drafted as a plan. Pure.
 */
export function draftDispatch(input: DraftInput): { draft: DraftFields } | { reason: string } {
  const learnings = input.learnings.map((learning) => learning.text).slice(0, 5);
  const common = {
    project: input.project,
    ...(input.defaultBudgetUsd !== undefined ? { budget_usd: input.defaultBudgetUsd } : {}),
    ...(input.planFirst ? { mode: "plan" as const } : {}),
    ...(learnings.length > 0 ? { learnings } : {}),
  };
  const { checkpoint } = input;
  const unlanded = input.openWork
    .filter((work) => work.state === "awaiting-landing" && work.branch)
    .sort((left, right) => (right.ageSeconds ?? 0) - (left.ageSeconds ?? 0))[0];
  const folder = input.folder ?? checkpoint?.projectDir ?? unlanded?.projectDir;
  if (!checkpoint && !unlanded) {
    const waiting = input.openWork.find((work) => work.state === "awaiting-answer");
    return {
      reason: waiting
        ? `${waiting.id} waits for the person's answer; answer it rather than dispatch again`
        : "there is no checkpoint, handoff or unlanded work to continue",
    };
  }
  if (folder === undefined) {
    return { reason: "no folder is known for the project; name the repository folder to work in" };
  }
  if (checkpoint) {
    return {
      draft: {
        ...common,
        project_dir: folder,
        task: checkpoint.resumePrompt,
        source: checkpoint.kind,
        source_ref: checkpoint.ref,
        handoff_id: checkpoint.ref,
        ...(checkpoint.branch ? { base: checkpoint.branch } : {}),
      },
    };
  }
  const work = unlanded!;
  const asked = work.task ? ` It was asked: ${work.task}` : "";
  return {
    draft: {
      ...common,
      project_dir: folder,
      task: `Carry on with the work of ${work.id} on branch ${work.branch}, which is finished but not landed yet: check what it did, finish what is left and make the tests pass.${asked}`,
      source: "open-work",
      source_ref: work.id,
      base: work.branch!,
    },
  };
}
