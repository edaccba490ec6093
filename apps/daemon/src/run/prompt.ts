import type { Dispatch } from "@gstack/contracts";
import { REPORT_SECTIONS } from "@gstack/daemon-client";

/**
 * The prompt a coding agent gets for a dispatch: the task, the dispatcher's learnings
 * (left out on a retry after a context overflow), constraints, where the dispatch file
 * is, and the report sections to end with.
 */
export function buildPrompt(
  dispatch: Dispatch,
  options: {
    dispatchFile: string;
    includeLearnings: boolean;
    attempt: number;
    /** Set when an earlier attempt was cut short by the daemon stopping or crashing. */
    resume?: { branch?: string; commits: string[] };
  },
): string {
  const lines: string[] = [
    `You are working on dispatch ${dispatch.id} from ${dispatch.dispatched_by}, without a person at the keyboard:`,
    "do not ask questions; make reasonable decisions and list the ones a person must make at the end.",
    `The full dispatch (JSON) is at ${options.dispatchFile}.`,
    "",
    "## Task",
    dispatch.task,
  ];
  if (dispatch.branch) lines.push("", `Work on the branch '${dispatch.branch}'.`);
  if (dispatch.constraints && dispatch.constraints.length > 0) {
    lines.push("", "## Constraints", ...dispatch.constraints.map((item) => `- ${item}`));
  }
  if (options.includeLearnings && dispatch.learnings && dispatch.learnings.length > 0) {
    lines.push("", "## What the dispatcher already knows", ...dispatch.learnings.map((item) => `- ${item}`));
  }
  if (options.resume) {
    const { branch, commits } = options.resume;
    lines.push(
      "",
      `This is attempt ${options.attempt}; it resumes a run that was interrupted before its end was recorded, so that run may have done some or all of the task. Check the working tree first and continue from there${branch ? ` on the branch '${branch}'` : ""}; do not redo work that is already committed.`,
    );
    if (commits.length > 0) {
      lines.push("Commits made so far:", ...commits.map((commit) => `- ${commit}`));
    } else lines.push("No commits were made so far.");
  } else if (options.attempt > 1) {
    lines.push(
      "",
      `This is attempt ${options.attempt}; an earlier attempt failed. Check the working tree first.`,
    );
  }
  lines.push(
    "",
    "## When you finish",
    "Commit your work with git. End your final message with these Markdown sections:",
    ...REPORT_SECTIONS.map((section) => `## ${section}`),
    "Under 'Learnings logged', one bullet per fact about this project worth remembering.",
  );
  return lines.join("\n");
}
