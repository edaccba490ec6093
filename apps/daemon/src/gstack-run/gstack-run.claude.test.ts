import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { apiRequest, reachDaemonApi, readState, submitDispatch } from "@gstack/daemon-client";
import { scripted } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { type ClaudeWorld, makeClaudeWorld } from "../claude-world";
import { completionOf, waitFor } from "../test-support";
import { writeGstackRun } from "./gstack-run-fixture";

const REPORT = [
  "Planned the search fix with /autoplan.",
  "",
  "## What shipped",
  "- A reviewed plan",
  "## Decisions made",
  "- None beyond gstack's",
  "## Learnings logged",
  "- None",
  "## Needs human judgment",
  "- The gate",
].join("\n");

let world: ClaudeWorld;

beforeEach(async () => {
  world = await makeClaudeWorld();
});

afterEach(() => world.cleanup());

async function runWithFinalText(id: string, finalText: string, options: { rejectGate?: string } = {}) {
  await world.start({ script: [scripted.text(finalText)] });
  await submitDispatch(world.layout, {
    id,
    dispatched_by: "wintermute",
    task: "Plan the search fix with /autoplan",
    project: "acme-widget",
    project_dir: world.repo,
  });
  const layout = world.layout;
  if (options.rejectGate !== undefined) {
    // A run at its gate waits for a person; rejecting it reports the run as it stood.
    await waitFor(
      async () => ((await readState(layout, id))?.status === "awaiting" ? true : undefined),
      60_000,
    );
    const api = await reachDaemonApi(layout);
    if (!api) throw new Error("the service API does not answer");
    const answered = await apiRequest(api, "POST", "/v1/answer", {
      body: JSON.stringify({ dispatch_id: id, answer: "reject", text: options.rejectGate }),
    });
    expect(answered.status).toBe(200);
  }
  const completion = await waitFor(() => completionOf(layout, id), 60_000);
  const report = await readFile(layout.dispatch.completedReport(id), "utf8");
  return { completion, report };
}

describe("a gstack run named by a real Claude Code agent", { timeout: loadBudget(90_000) }, () => {
  it("is read into the completion and the report, and acknowledged with the dispatch id", async () => {
    const runDir = join(
      world.root,
      "worktrees",
      "acme-widget",
      "dispatch-gstack-gate",
      ".gstack",
      "runs",
      "r1",
    );
    // Committed, so the dispatch's own worktree (made from HEAD) holds the run the agent names.
    await writeGstackRun(join(world.repo, ".gstack", "runs", "r1"));
    world.git("add", ".gstack");
    world.git("commit", "-qm", "run");
    const { completion, report } = await runWithFinalText(
      "dispatch-gstack-gate",
      `${REPORT}\n\nGSTACK_RESULT: skill=autoplan status=gate_pending run=.gstack/runs/r1`,
      { rejectGate: "not this week" },
    );
    expect(completion.error).toContain("gate rejected: not this week");
    expect(completion).toMatchObject({
      status: "cancelled",
      gstack_run: {
        skill: "autoplan",
        status: "gate_pending",
        check: "valid",
        run: "r1",
        acknowledged: true,
        decisions_pending: [
          { id: "r1-d3", recommended: null },
          { id: "r1-p1", recommended: "a" },
        ],
        findings: [{ severity: "Critical" }, { severity: "High" }],
        tasks: [{ id: "r1-t1", acceptance: "pnpm test search" }],
      },
    });
    expect(report).toContain("## gstack run");
    expect(report).toContain("ended **gate_pending**");
    expect(report).toContain("1. `r1-d3` Drop the session cache. Options: a, b. No recommendation.");
    expect(report).toContain("- **Critical** `r1-eng-native-1` Critical finding 1 (open)");
    expect(report).toContain("done when: `pnpm test search`");
    expect(report).toContain("stopped at its gate: 2 decisions wait for you");
    const manifest = JSON.parse(await readFile(join(runDir, "run.json"), "utf8"));
    expect(manifest.consumed_by).toEqual([{ consumer: "dispatch-gstack-gate", at: expect.any(String) }]);
  });

  it("reports a run directory outside the working directory as such, not as a success", async () => {
    const outside = join(world.base, "elsewhere");
    await writeGstackRun(outside, { status: "complete" });
    const { completion, report } = await runWithFinalText(
      "dispatch-gstack-outside",
      `${REPORT}\n\nGSTACK_RESULT: skill=autoplan status=complete run=${outside}`,
    );
    expect(completion).toMatchObject({ gstack_run: { check: "outside", status: "complete" } });
    expect(report).toContain("NOT read: it lies outside the agent's working directory");
    expect(report).toMatch(/## Needs human judgment[\s\S]*is outside: run=/);
    const manifest = JSON.parse(await readFile(join(outside, "run.json"), "utf8"));
    expect(manifest.consumed_by).toBeUndefined();
    expect(world.git("status", "--porcelain")).toBe("");
  });
});
