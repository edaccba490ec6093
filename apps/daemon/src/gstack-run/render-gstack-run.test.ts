import type { Completion } from "@gstack/contracts";
import { describe, expect, it } from "vitest";
import { completeSections, renderReport } from "../finish/report";

const base: Completion = { dispatch_id: "dispatch-a", status: "completed", duration: 5 };

function reportOf(completion: Completion, gstackResultLine?: string): string {
  const facts = {
    task: "Plan it",
    commitSubjects: [],
    learningsRecorded: [],
    ...(gstackResultLine ? { gstackResultLine } : {}),
  };
  return renderReport(completion, completeSections(undefined, completion, facts), "Plan it");
}

describe("a report's gstack run", () => {
  it("numbers the pending decisions and lists the findings and tasks that matter", () => {
    const report = reportOf({
      ...base,
      gstack_run: {
        skill: "autoplan",
        status: "gate_pending",
        run_dir: ".gstack/runs/r1",
        check: "valid",
        run: "r1",
        acknowledged: true,
        decisions_pending: [
          { id: "r1-d3", title: "Drop the cache", options: ["a", "b"], recommended: null },
          { id: "r1-p1", title: "Approve the plan", options: ["a", "b"], recommended: "a" },
        ],
        findings: [{ id: "r1-f1", severity: "Critical", title: "SQL injection", disposition: "open" }],
        tasks: [{ id: "r1-t1", title: "Escape", status: "ready", acceptance: "pnpm test" }],
      },
    });
    expect(report).toContain(
      "- gstack's autoplan stopped at its gate: 2 decisions wait for you (see gstack run).",
    );
    expect(report).toContain("- 1 Critical finding in gstack's review.");
    expect(report).toContain(
      "gstack's `autoplan` ended **gate_pending** (run r1, `.gstack/runs/r1`; checked against gstack's artifact schemas and hashes; acknowledged as read).",
    );
    expect(report).toContain("1. `r1-d3` Drop the cache. Options: a, b. No recommendation.");
    expect(report).toContain("2. `r1-p1` Approve the plan. Options: a, b. Recommended: a.");
    expect(report).toContain("- `r1-t1` Escape (ready); done when: `pnpm test`");
  });

  it("says a run that did not check out was not used, with its problems", () => {
    const report = reportOf({
      ...base,
      gstack_run: {
        skill: "review",
        status: "complete",
        run_dir: "runs/r1",
        check: "invalid",
        problems: [
          "artifact findings.jsonl (findings.jsonl): sha256 0123… is not the recorded abcd…; changed after the run",
        ],
      },
    });
    expect(report).toContain("- gstack's run directory `runs/r1` is invalid: artifact findings.jsonl");
    expect(report).toContain("Its result was not used.");
    expect(report).toContain("NOT trusted: it failed the check");
    expect(report).not.toContain("### Decisions waiting for you");
  });

  it("quotes a last GSTACK_RESULT line that does not parse", () => {
    const report = reportOf(base, "GSTACK_RESULT: skill=review status=finished run=`x`");
    expect(report).toContain(
      "- The agent's last GSTACK_RESULT line does not parse, so no gstack run was read: `GSTACK_RESULT: skill=review status=finished run='x'`",
    );
    expect(report).not.toContain("## gstack run");
  });
});
