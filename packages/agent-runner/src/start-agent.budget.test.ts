import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, describe, expect, it } from "vitest";
import { processGroupAlive } from "./process-group";
import { startAgent } from "./start-agent";
import { gitIdentity as identity, ScratchFolders } from "./test-support";

const claude = join(import.meta.dirname, "..", "node_modules", ".bin", "claude");
const scratch = new ScratchFolders();
const models: ScriptedModel[] = [];

afterEach(async () => {
  for (const model of models.splice(0)) await model.close();
  scratch.removeAll();
});

describe("a spend cap", () => {
  it("is handed to Claude Code, which stops mid-run; the run fails as budget_exhausted with what was spent", async () => {
    const model = await startScriptedModel({
      script: [
        scripted.bash("git status", "Look around"),
        // Reported usage large enough to cost more than the cap on this turn.
        { ...scripted.bash("git log --oneline", "Read history"), inputTokens: 400_000 },
        scripted.bash("git status", "Never reached"),
        scripted.text("Never said."),
      ],
    });
    models.push(model);
    const home = scratch.folder("agent-runner-home-");
    const agent = startAgent({
      agent: "claude",
      binary: claude,
      prompt: "Look at the repository.",
      cwd: scratch.repository(),
      env: { ...model.claudeEnv(home), ...identity, CLAUDE_CODE_MAX_RETRIES: "0" },
      budgetUsd: 1,
    });
    const result = await agent.done;
    expect(model.agentRequests()).toHaveLength(2);
    expect(result.result).toMatchObject({ subtype: "error_max_budget_usd" });
    expect(result.progress.costUsd).toBeGreaterThan(1);
    expect(result.failure).toMatchObject({ kind: "budget_exhausted", retryable: false });
    expect(result.failure?.message).toMatch(/^Spent \$\d+\.\d\d: the agent reached its budget/);
  });

  it("stops an agent that reports a running cost, with its whole process group, once the cost reaches the cap", async () => {
    const program = join(scratch.folder("budget-agent-"), "agent.mjs");
    writeFileSync(
      program,
      [
        'import { spawn } from "node:child_process";',
        'spawn("sleep", ["300"], { stdio: "ignore" });',
        "let cost = 0;",
        "setInterval(() => {",
        "  cost += 0.4;",
        '  console.log(JSON.stringify({ type: "message", role: "assistant", content: "step", total_cost_usd: cost }));',
        "}, 20);",
      ].join("\n"),
    );
    const agent = startAgent({
      agent: "spender",
      prompt: "spend",
      cwd: scratch.folder("budget-cwd-"),
      trackGit: false,
      killGraceMs: 200,
      command: { command: [process.execPath, program, "{prompt}"] },
      budgetUsd: 1,
    });
    const result = await agent.done;
    expect(result.cancelled).toBe(false);
    expect(result.failure).toMatchObject({ kind: "budget_exhausted", retryable: false, evidence: "budget" });
    expect(result.failure?.message).toBe("Spent $1.20 of its $1.00 budget; the agent was stopped.");
    expect(agent.pid !== undefined && processGroupAlive(agent.pid)).toBe(false);
  });

  it("refuses a cap that is not an amount above 0", () => {
    for (const budgetUsd of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() =>
        startAgent({ agent: "claude", prompt: "x", cwd: scratch.folder("budget-cwd-"), budgetUsd }),
      ).toThrow(/budgetUsd must be an amount above 0/);
    }
  });
});
