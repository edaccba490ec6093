import type { RunReport } from "./generate-bundle";

/** The run report as text for a terminal: one line per skill, details only where needed. */
export function formatReport(report: RunReport): string {
  const lines: string[] = [];
  for (const skill of report.skills) {
    const errors = skill.issues.filter((issue) => issue.severity === "error");
    const status = skill.leftovers.length === 0 && errors.length === 0 ? "ok" : "needs attention";
    lines.push(
      `${skill.name} (${skill.source}): ${status}; ${skill.leftovers.length} Claude-only reference(s) left, ${skill.stripped.length} preamble part(s) removed`,
    );
    for (const leftover of skill.leftovers) {
      lines.push(`  line ${leftover.line} [${leftover.context}] ${leftover.text}: ${leftover.reason}`);
    }
    for (const issue of skill.issues) {
      lines.push(`  ${issue.severity} ${issue.rule} ${issue.field || "(file)"}: ${issue.message}`);
    }
  }
  for (const skipped of report.skipped) lines.push(`skipped ${skipped.source}: ${skipped.reason}`);
  for (const file of report.supportLeftovers) {
    lines.push(`${file.path}: ${file.leftovers.length} Claude-only reference(s) left`);
    for (const leftover of file.leftovers) {
      lines.push(`  line ${leftover.line} [${leftover.context}] ${leftover.text}: ${leftover.reason}`);
    }
  }
  if (report.missingSupport.length > 0) {
    lines.push(
      `${report.missingSupport.length} file(s) the skills read are not in the input gstack folder, so they cannot be installed (generate from a full gstack install such as ~/.claude/skills/gstack):`,
    );
    for (const path of report.missingSupport) lines.push(`  ${path}`);
  }
  for (const [construct, byContext] of Object.entries(report.leftoversByConstruct)) {
    const where = Object.entries(byContext)
      .map(([context, count]) => `${count} in ${context}`)
      .join(", ");
    lines.push(`left: ${construct}: ${where}`);
  }
  lines.push(
    `${report.skills.length} skill(s), ${report.leftoverCount} Claude-only reference(s) left, ${report.errorCount} validator error(s)`,
  );
  return `${lines.join("\n")}\n`;
}
