/** How one part of the set-up looks: fine, worth a look, or stopping the daemon from working. */
export type CheckStatus = "ok" | "warn" | "fail" | "skip";

/** One line of `gstack-dispatch doctor`: what was checked, what was found and the one-line fix. */
export interface DoctorCheck {
  /** A short stable name (`node`, `agent:claude`, `config`, `secret:.dispatch-secret`, …). */
  name: string;
  status: CheckStatus;
  /** What was found, in a sentence. */
  detail: string;
  /** The one thing to do about it, when the status is warn or fail. */
  fix?: string;
}

const marks: Record<CheckStatus, string> = { ok: "ok  ", warn: "warn", fail: "FAIL", skip: "skip" };

/** The report a person reads: one line per check, its fix indented under it. */
export function formatDoctor(checks: DoctorCheck[]): string {
  const lines: string[] = [];
  for (const check of checks) {
    lines.push(`${marks[check.status]}  ${check.name}: ${check.detail}`);
    if (check.fix && check.status !== "ok") lines.push(`      fix: ${check.fix}`);
  }
  const failed = checks.filter((check) => check.status === "fail").length;
  const warned = checks.filter((check) => check.status === "warn").length;
  lines.push(
    failed === 0 && warned === 0
      ? "everything checked is in order"
      : `${failed} problem(s) to fix, ${warned} to look at`,
  );
  return `${lines.join("\n")}\n`;
}
