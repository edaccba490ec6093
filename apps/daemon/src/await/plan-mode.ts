import type { Dispatch, DispatchSettings } from "@gstack/contracts";
import { folderOrRepositoryListed, REPORT_SECTIONS } from "@gstack/daemon-client";

/** Claude Code's read-only mode: it may read and search, but changes nothing. */
export const PLAN_PERMISSION_ARGS = ["--permission-mode", "plan"] as const;

/**
 * Whether a dispatch plans first and waits for a person: when it asks (`mode: "plan"`), or when
 * its project folder, or the repository it belongs to, matches `plan_first_repos` in the config
 * (such repositories never run an agent that may edit before a person approved its plan, whatever
 * the dispatch says, nor through another folder whose `.git` leads to them).
 */
export async function mustPlanFirst(
  dispatch: Dispatch,
  projectDir: string,
  settings: Pick<DispatchSettings, "plan_first_repos">,
): Promise<boolean> {
  if (dispatch.mode === "plan") return true;
  return folderOrRepositoryListed(projectDir, settings.plan_first_repos ?? []);
}

/** What the agent is told on top of the task when it only plans. */
export function planInstructions(): string {
  return [
    "## Plan only",
    "This run is read-only: do not create, edit or delete files and do not commit. Read what you need,",
    "then end with your plan as your final message: the steps, the files you would change and how you",
    "would check the result. A person will approve it, ask for changes, or reject it; once approved you",
    "carry it out in this same session.",
  ].join("\n");
}

/** The prompt of a run that continues the planning session after a person's answer. */
export function answerPrompt(
  answer:
    | { kind: "approve" }
    | { kind: "revise"; feedback: string }
    | { kind: "reply"; reply: string; gate_rev: number; run_dir: string },
): string {
  if (answer.kind === "reply") {
    return [
      `The person answered the gstack gate of the run in ${answer.run_dir} (gate revision ${answer.gate_rev}) with this reply:`,
      "",
      `    ${answer.reply}`,
      "",
      "Record it with gstack's own gate answer for this run (for a gate.json, gstack-gate decisions",
      `<run dir>/gate.json --reply "${answer.reply}" --gate-rev ${answer.gate_rev} appended to decisions.jsonl; for /autoplan,`,
      `gstack-autoplan answer --out <run dir> --gate-rev ${answer.gate_rev} --reply "${answer.reply}"), then continue the run to`,
      "its end and finish as before, with the report sections and the last GSTACK_RESULT line.",
    ].join("\n");
  }
  if (answer.kind === "revise") {
    return [
      "The person read your plan and asks for changes:",
      "",
      answer.feedback,
      "",
      "Plan again with that in mind. This run is still read-only: change nothing, and end with the",
      "whole revised plan as your final message.",
    ].join("\n");
  }
  return [
    "The person approved your plan. Carry it out now: you may edit files and run commands.",
    "Commit your work with git. End your final message with these Markdown sections:",
    ...REPORT_SECTIONS.map((section) => `## ${section}`),
  ].join("\n");
}
