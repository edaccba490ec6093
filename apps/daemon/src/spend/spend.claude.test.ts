import { readFile } from "node:fs/promises";
import { submitDispatch } from "@gstack/daemon-client";
import { scripted } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { type ClaudeWorld, makeClaudeWorld } from "../claude-world";
import { auditOf, completionOf, waitFor } from "../test-support";

let world: ClaudeWorld;

beforeEach(async () => {
  world = await makeClaudeWorld();
});

afterEach(() => world.cleanup());

describe("a real Claude Code agent with a spend cap", { timeout: loadBudget(90_000) }, () => {
  it("is stopped when its cost reaches the cap mid-run, and the dispatch ends budget_exhausted saying what was spent", async () => {
    await world.start({
      script: [
        scripted.write("first.txt", "one\n"),
        scripted.bash("git add first.txt && git commit -m 'Add first.txt'"),
        // This turn reports usage that costs more than the cap.
        { ...scripted.write("second.txt", "two\n"), inputTokens: 400_000 },
        scripted.bash("git add second.txt && git commit -m 'Add second.txt'"),
        scripted.text("Done."),
      ],
    });
    await submitDispatch(world.layout, {
      id: "dispatch-claude-budget",
      dispatched_by: "wintermute",
      task: "Add two files, committing each",
      project: "acme-widget",
      project_dir: world.repo,
      budget_usd: 1,
    });
    const layout = world.layout;
    const completion = await waitFor(() => completionOf(layout, "dispatch-claude-budget"), 60_000);
    expect(completion).toMatchObject({
      status: "failed",
      error_kind: "budget_exhausted",
      budget_usd: 1,
      retries: 0,
      commits: 1,
    });
    expect(Number(completion.cost_usd)).toBeGreaterThan(1);
    expect(completion.error).toMatch(/^Spent \$\d+\.\d\d: the agent reached its budget without finishing\.$/);
    // Stopped mid-run: the turns after the expensive one were never asked for.
    expect(world.model?.agentRequests()).toHaveLength(3);
    const report = await readFile(layout.dispatch.completedReport("dispatch-claude-budget"), "utf8");
    expect(report).toMatch(/Cost: \$\d+\.\d\d of a \$1\.00 budget\./);
    expect(report).toContain("(budget_exhausted)");
    const failed = (await auditOf(layout)).find((event) => event.event === "failed");
    expect(failed?.reason).toMatch(/^budget_exhausted: Spent \$/);
  });
});
