import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { processGroupAlive } from "./process-group";
import { startAgent } from "./start-agent";
import { gitIdentity as identity, ScratchFolders } from "./test-support";

/** The real Codex CLI from the devDependency, driven by the scripted model's Responses API. */
const codex = join(import.meta.dirname, "..", "node_modules", ".bin", "codex");
const scratch = new ScratchFolders();
const models: ScriptedModel[] = [];

afterEach(async () => {
  for (const model of models.splice(0)) await model.close();
  scratch.removeAll();
});

async function scriptedSetup(options: Parameters<typeof startScriptedModel>[0]) {
  const model = await startScriptedModel(options);
  models.push(model);
  const env = { ...(await model.codexEnv(scratch.folder("codex-home-"))), ...identity };
  const cwd = scratch.repository("codex-repo-");
  return { model, env, cwd };
}

describe("startAgent with the real Codex CLI and a scripted model", { timeout: loadBudget(90_000) }, () => {
  it("runs a shell command in the sandbox that writes and commits, and ends in success with one commit", async () => {
    const { model, env, cwd } = await scriptedSetup({
      script: [
        scripted.toolUse("exec_command", {
          cmd: "printf 'hello\\n' > hello.txt && git add hello.txt && git commit -q -m 'Add hello'",
        }),
        scripted.text("Added hello.txt and committed it."),
      ],
    });
    const agent = startAgent({
      agent: "codex",
      binary: codex,
      prompt: "Add hello.txt and commit it.",
      cwd,
      env,
    });
    expect(agent.startSha).toMatch(/^[0-9a-f]{40}$/);
    const result = await agent.done;
    expect(result.failure).toBeUndefined();
    expect(result.exitCode).toBe(0);
    expect(result.git).toMatchObject({ commitCount: 1, branch: "main" });
    expect(result.git?.commits[0]?.subject).toBe("Add hello");
    expect(readFileSync(join(cwd, "hello.txt"), "utf8")).toBe("hello\n");
    expect(result.progress.sessionId).toBeTruthy();
    expect(result.progress.toolUseCounts).toEqual({ Bash: 1 });
    expect(result.progress.lastAction).toContain("git commit -q -m 'Add hello'");
    expect(result.result).toMatchObject({ isError: false, text: "Added hello.txt and committed it." });
    expect(model.agentRequests().map((request) => request.api)).toEqual([
      "openai-responses",
      "openai-responses",
    ]);
    expect(model.agentRequests()[0]!.promptText).toContain("Add hello.txt and commit it.");
    expect(model.agentRequests()[1]!.toolResultCount).toBe(1);
    expect(processGroupAlive(agent.pid!)).toBe(false);
  });

  it.each([
    ["429", scripted.rateLimited(), "rate_limit", true],
    ["401", scripted.unauthorized(), "auth", false],
    ["500", scripted.error(500), "tool_failure", true],
    [
      "400 context window",
      scripted.error(400, { message: "Your input exceeds the context window of this model." }),
      "context_overflow",
      true,
    ],
  ] as const)(
    "classifies a failed turn after an HTTP %s",
    async (_name, step, kind, retryable) => {
      const { env, cwd } = await scriptedSetup({ script: [step] });
      const result = await startAgent({ agent: "codex", binary: codex, prompt: "Do the task.", cwd, env })
        .done;
      expect(result.exitCode).not.toBe(0);
      expect(result.result?.isError).toBe(true);
      expect(result.failure).toMatchObject({ kind, retryable });
    },
    90_000,
  );

  it("still lets Codex commit when the caller does not track git", async () => {
    const { env, cwd } = await scriptedSetup({
      script: [
        scripted.toolUse("exec_command", { cmd: "git commit -q --allow-empty -m 'Empty'" }),
        scripted.text("Committed."),
      ],
    });
    const result = await startAgent({
      agent: "codex",
      binary: codex,
      prompt: "Commit.",
      cwd,
      env,
      trackGit: false,
    }).done;
    expect(result.failure).toBeUndefined();
    expect(result.git).toBeUndefined();
    expect(execFileSync("git", ["log", "--format=%s"], { cwd, encoding: "utf8" }).trim().split("\n")).toEqual(
      ["Empty", "Start"],
    );
  });
});
