import type { GstackRunSummary } from "@gstack/contracts";

const CHECK_WORDS: Record<GstackRunSummary["check"], string> = {
  valid: "checked against gstack's artifact schemas and hashes",
  invalid: "NOT trusted: it failed the check",
  missing: "NOT found",
  outside: "NOT read: it lies outside the agent's working directory",
};

function code(text: string): string {
  const clean = text.replace(/[\r\n]+/g, " ");
  const fence = clean.includes("`") ? "``" : "`";
  return `${fence}${clean}${fence}`;
}

/** Lines for "Needs human judgment": what in a gstack run a person has to look at. */
export function gstackJudgment(run: GstackRunSummary): string[] {
  const lines: string[] = [];
  if (run.check !== "valid") {
    lines.push(
      `- gstack's run directory ${code(run.run_dir)} is ${run.check}: ${run.problems?.[0] ?? "no detail"}. Its result was not used.`,
    );
    return lines;
  }
  const pending = run.decisions_pending?.length ?? 0;
  if (run.status === "gate_pending") {
    lines.push(
      `- gstack's ${run.skill} stopped at its gate: ${pending === 1 ? "1 decision waits" : `${pending} decisions wait`} for you (see gstack run).`,
    );
  } else if (run.status !== "complete") {
    lines.push(`- gstack's ${run.skill} ended **${run.status}**.`);
  }
  const critical = run.findings?.filter((finding) => finding.severity === "Critical").length ?? 0;
  if (critical > 0)
    lines.push(`- ${critical} Critical finding${critical === 1 ? "" : "s"} in gstack's review.`);
  return lines;
}

/** The "gstack run" section of a report: status, check, pending decisions, findings, tasks. */
export function renderGstackRun(run: GstackRunSummary): string {
  const parts: string[] = [];
  const id = run.run ? `run ${run.run}, ` : "";
  const acknowledged = run.acknowledged ? "; acknowledged as read" : "";
  parts.push(
    `gstack's \`${run.skill}\` ended **${run.status}** (${id}${code(run.run_dir)}; ${CHECK_WORDS[run.check]}${acknowledged}).`,
  );
  if (run.problems && run.problems.length > 0) {
    parts.push(
      ["Problems:", ...run.problems.map((problem) => `- ${problem.replace(/[\r\n]+/g, " ")}`)].join("\n"),
    );
  }
  if (run.decisions_pending && run.decisions_pending.length > 0) {
    parts.push(
      [
        "### Decisions waiting for you",
        "",
        ...run.decisions_pending.map((decision, index) => {
          const options = decision.options.length > 0 ? ` Options: ${decision.options.join(", ")}.` : "";
          const recommended = decision.recommended
            ? ` Recommended: ${decision.recommended}.`
            : " No recommendation.";
          return `${index + 1}. ${code(decision.id)} ${decision.title}.${options}${recommended}`;
        }),
      ].join("\n"),
    );
  }
  if (run.findings && run.findings.length > 0) {
    parts.push(
      [
        "### Critical and High findings",
        "",
        ...run.findings.map(
          (finding) =>
            `- **${finding.severity}** ${code(finding.id)} ${finding.title}${finding.disposition ? ` (${finding.disposition})` : ""}`,
        ),
      ].join("\n"),
    );
  }
  if (run.tasks && run.tasks.length > 0) {
    parts.push(
      [
        "### Tasks",
        "",
        ...run.tasks.map(
          (task) =>
            `- ${code(task.id)} ${task.title} (${task.status}); done when: ${code(task.acceptance || "no check given")}`,
        ),
      ].join("\n"),
    );
  }
  return `## gstack run\n\n${parts.join("\n\n")}\n`;
}
