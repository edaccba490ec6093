import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Daemon } from "../daemon";
import { submitDispatch } from "../submit";
import { auditOf, completionOf, makeWorld, type TestWorld, waitFor } from "../test-support";

const claude = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "claude");

let world: TestWorld;
let model: ScriptedModel | undefined;
let daemon: Daemon | undefined;
let home: string;

beforeEach(async () => {
  world = await makeWorld();
  execFileSync("git", ["-C", world.repo, "config", "user.name", "Scripted Agent"]);
  execFileSync("git", ["-C", world.repo, "config", "user.email", "agent@example.invalid"]);
  home = await mkdtemp(join(tmpdir(), "gstack-claude-home-"));
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await model?.close();
  model = undefined;
  await rm(home, { recursive: true, force: true });
  await world.cleanup();
});

describe("a real Claude Code agent with a spend cap", { timeout: 90_000 }, () => {
  it("is stopped when its cost reaches the cap mid-run, and the dispatch ends budget_exhausted saying what was spent", async () => {
    model = await startScriptedModel({
      script: [
        scripted.write("first.txt", "one\n"),
        scripted.bash("git add first.txt && git commit -m 'Add first.txt'"),
        // This turn reports usage that costs more than the cap.
        { ...scripted.write("second.txt", "two\n"), inputTokens: 400_000 },
        scripted.bash("git add second.txt && git commit -m 'Add second.txt'"),
        scripted.text("Done."),
      ],
    });
    daemon = new Daemon({
      openclawWorkspace: false,
      root: world.root,
      claudeBinary: claude,
      agentEnv: { ...model.claudeEnv(home), CLAUDE_CODE_MAX_RETRIES: "0" },
      settings: { trusted_repos: [world.base] },
    });
    await daemon.start();
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
    expect(model.agentRequests()).toHaveLength(3);
    const report = await readFile(layout.dispatch.completedReport("dispatch-claude-budget"), "utf8");
    expect(report).toMatch(/Cost: \$\d+\.\d\d of a \$1\.00 budget\./);
    expect(report).toContain("(budget_exhausted)");
    const failed = (await auditOf(layout)).find((event) => event.event === "failed");
    expect(failed?.reason).toMatch(/^budget_exhausted: Spent \$/);
  });
});
