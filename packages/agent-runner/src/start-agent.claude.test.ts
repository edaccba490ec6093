import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../../vitest.load-budget";
import { processDescendants, processGroupAlive } from "./process-group";
import { decideRetry } from "./retry-policy";
import { startAgent } from "./start-agent";
import { gitIdentity as identity, ScratchFolders } from "./test-support";
import { restrictionsToDisallowedTools } from "./tool-permissions";

/** The real Claude Code CLI from the devDependency, driven by the scripted model below. */
const claude = join(import.meta.dirname, "..", "node_modules", ".bin", "claude");
const scratch = new ScratchFolders();
const models: ScriptedModel[] = [];

afterEach(async () => {
  for (const model of models.splice(0)) await model.close();
  scratch.removeAll();
});

async function scriptedSetup(options: Parameters<typeof startScriptedModel>[0]) {
  const model = await startScriptedModel(options);
  models.push(model);
  const home = scratch.folder("agent-runner-home-");
  const env = { ...model.claudeEnv(home), ...identity, CLAUDE_CODE_MAX_RETRIES: "0" };
  return { model, env, cwd: scratch.repository() };
}

async function waitFor(condition: () => boolean, what: string) {
  await waitUntil(() => (condition() ? true : undefined), { idleMs: 20_000, what });
}

describe("startAgent with the real Claude Code CLI and a scripted model", () => {
  it("writes a file, commits it through an allowed git command, and ends in success with one commit", async () => {
    const { model, env, cwd } = await scriptedSetup({
      script: [
        scripted.write("src/greeting.ts", 'export const greeting = "hello";\n'),
        scripted.bash("git add src/greeting.ts && git commit -m 'Add greeting'", "Commit the greeting"),
        scripted.text("Added src/greeting.ts and committed it."),
      ],
    });
    const streamFile = join(scratch.folder("agent-runner-stream-"), "session.jsonl");
    const updates: number[] = [];
    const agent = startAgent({
      agent: "claude",
      binary: claude,
      prompt: "Add a greeting module and commit it.",
      cwd,
      env,
      streamFile,
      progressIntervalMs: 0,
      onProgress: (progress) => updates.push(progress.events),
    });
    expect(agent.pid).toBeGreaterThan(0);
    const result = await agent.done;
    expect(result.failure).toBeUndefined();
    expect(result.exitCode).toBe(0);
    expect(result.git?.commitCount).toBe(1);
    expect(result.git?.commits[0]?.subject).toBe("Add greeting");
    expect(result.git?.branch).toBe("main");
    expect(result.startSha).toMatch(/^[0-9a-f]{40}$/);
    expect(readFileSync(join(cwd, "src/greeting.ts"), "utf8")).toContain("hello");
    expect(result.progress).toMatchObject({
      turns: 3,
      toolUses: 2,
      toolUseCounts: { Write: 1, Bash: 1 },
      lastAssistantText: "Added src/greeting.ts and committed it.",
      lastAction: "Bash: git add src/greeting.ts && git commit -m 'Add greeting'",
      permissionDenials: [],
    });
    expect(result.progress.sessionId).toMatch(/[0-9a-f-]{36}/);
    expect(result.result).toMatchObject({ subtype: "success", isError: false, numTurns: 3 });
    expect(updates.length).toBeGreaterThan(0);
    expect(result.streamFile?.truncated).toBe(false);
    const kept = readFileSync(streamFile, "utf8").trim().split("\n");
    expect(kept.length).toBe(result.progress.events);
    expect(JSON.parse(kept.at(-1)!).type).toBe("result");
    expect(model.agentRequests()[0]!.firstUserText).toContain("Add a greeting module");
    expect(processGroupAlive(agent.pid!)).toBe(false);
  });

  it("classifies a 429 as rate_limit: retry as-is after a back-off", async () => {
    const { env, cwd } = await scriptedSetup({ script: [scripted.rateLimited()] });
    const result = await startAgent({ agent: "claude", binary: claude, prompt: "Do the task.", cwd, env })
      .done;
    expect(result.exitCode).toBe(1);
    expect(result.result).toMatchObject({ subtype: "success", isError: true, apiErrorStatus: 429 });
    expect(result.failure).toMatchObject({
      kind: "rate_limit",
      retryable: true,
      retryWithoutLearnings: false,
    });
    expect(decideRetry(result.failure!, 1, true)).toMatchObject({ action: "retry", dropLearnings: false });
    expect(decideRetry(result.failure!, 2, true).action).toBe("escalate");
  });

  it("classifies prompt-too-long as context_overflow, and the retry without learnings succeeds", async () => {
    const { model, env, cwd } = await scriptedSetup({
      respond: (request) =>
        request.promptText.includes("## Learnings") ? scripted.promptTooLong() : undefined,
      script: [scripted.text("Done without the learnings.")],
    });
    const task = "Fix the failing test.";
    const first = await startAgent({
      agent: "claude",
      binary: claude,
      prompt: `${task}\n\n## Learnings\n- the build needs pnpm`,
      cwd,
      env,
    }).done;
    expect(first.failure).toMatchObject({
      kind: "context_overflow",
      retryable: true,
      retryWithoutLearnings: true,
    });
    const decision = decideRetry(first.failure!, 1, true);
    expect(decision).toMatchObject({ action: "retry", dropLearnings: true });
    const second = await startAgent({ agent: "claude", binary: claude, prompt: task, cwd, env }).done;
    expect(second.failure).toBeUndefined();
    expect(second.result?.text).toBe("Done without the learnings.");
    expect(
      model.agentRequests().filter((request) => request.promptText.includes("## Learnings")).length,
    ).toBe(1);
  });

  it("classifies a 401 as auth: no retry", async () => {
    const { env, cwd } = await scriptedSetup({ script: [scripted.unauthorized()] });
    const result = await startAgent({ agent: "claude", binary: claude, prompt: "Do the task.", cwd, env })
      .done;
    expect(result.failure).toMatchObject({ kind: "auth", retryable: false });
    expect(decideRetry(result.failure!, 1, true).action).toBe("escalate");
  });

  it("classifies a 529 as a transient tool_failure", async () => {
    const { env, cwd } = await scriptedSetup({ script: [scripted.overloaded()] });
    const result = await startAgent({ agent: "claude", binary: claude, prompt: "Do the task.", cwd, env })
      .done;
    expect(result.failure).toMatchObject({ kind: "tool_failure", retryable: true });
  });

  it("records refused commands: a git push that was not granted, and a commit a restriction forbids", async () => {
    const { env, cwd } = await scriptedSetup({
      script: [
        scripted.write("a.txt", "a\n"),
        scripted.bash("git add a.txt && git commit -m 'Add a'"),
        scripted.bash("git push origin main"),
        scripted.text("I could not commit or push."),
      ],
    });
    const result = await startAgent({
      agent: "claude",
      binary: claude,
      prompt: "Add a.txt.",
      cwd,
      env,
      disallowedTools: restrictionsToDisallowedTools([{ block: "exec", pattern: "git commit:*" }]),
    }).done;
    expect(result.git?.commitCount).toBe(0);
    expect(result.progress.toolErrors).toBe(2);
    expect(result.progress.permissionDenials.map((denial) => denial.toolName)).toEqual(["Bash", "Bash"]);
    expect(result.progress.permissionDenials[1]!.action).toBe("Bash: git push origin main");
    expect(result.failure).toMatchObject({ kind: "logic_error", retryable: false });
  });

  it("cancels a hung session: the whole process group is gone afterwards", async () => {
    const { model, env, cwd } = await scriptedSetup({ script: [scripted.hang()] });
    const agent = startAgent({
      agent: "claude",
      binary: claude,
      prompt: "Do the task.",
      cwd,
      env,
      killGraceMs: 3_000,
    });
    await waitFor(() => model.hangingCount() > 0, "Claude Code waiting on the model");
    expect(processGroupAlive(agent.pid!)).toBe(true);
    await agent.cancel("no answer from the model");
    const result = await agent.done;
    expect(result.cancelled).toBe(true);
    expect(result.failure).toMatchObject({ kind: "cancelled", retryable: false });
    expect(result.failure?.message).toContain("no answer from the model");
    expect(processGroupAlive(agent.pid!)).toBe(false);
  });

  it("times out a hung session and stops its process group", async () => {
    const { env, cwd } = await scriptedSetup({ script: [scripted.hang()] });
    const agent = startAgent({
      agent: "claude",
      binary: claude,
      prompt: "Do the task.",
      cwd,
      env,
      timeoutMs: 3_000,
      killGraceMs: 2_000,
    });
    const result = await agent.done;
    expect(result.timedOut).toBe(true);
    expect(result.failure?.kind).toBe("timeout");
    expect(processGroupAlive(agent.pid!)).toBe(false);
    expect(existsSync(cwd)).toBe(true);
  });

  it("cancels a session in the middle of a long tool: the tool's own process group is gone too", async () => {
    const { env, cwd } = await scriptedSetup({
      script: [scripted.bash('node -e "setTimeout(() => {}, 300000)"', "Wait for the server")],
    });
    const agent = startAgent({
      agent: "claude",
      binary: claude,
      prompt: "Start the server.",
      cwd,
      env,
      allowedTools: ["Bash(node:*)"],
      killGraceMs: 3_000,
    });
    let tool: { pid: number; processGroupId: number } | undefined;
    await waitFor(() => {
      tool = processDescendants(agent.pid!).find((descendant) => descendant.processGroupId !== agent.pid);
      return tool !== undefined;
    }, "the tool's process in a group of its own");
    await agent.cancel("taking too long");
    expect((await agent.done).cancelled).toBe(true);
    expect(processGroupAlive(agent.pid!)).toBe(false);
    expect(processGroupAlive(tool!.processGroupId)).toBe(false);
  });

  it("hands a prompt too long for one argument to the CLI on stdin", async () => {
    const { model, env, cwd } = await scriptedSetup({ script: [scripted.text("Read it all.")] });
    const prompt = `BEGIN ${"a learning worth keeping. ".repeat(8_000)}END`;
    const result = await startAgent({ agent: "claude", binary: claude, prompt, cwd, env }).done;
    expect(result.failure).toBeUndefined();
    const received = model.agentRequests()[0]!.promptText;
    expect(received).toContain("BEGIN a learning worth keeping.");
    expect(received).toContain("a learning worth keeping. END");
  });

  it("applies write and read restrictions as disallowed Claude Code tools", async () => {
    const { env, cwd } = await scriptedSetup({
      script: [
        scripted.write("secrets/key.txt", "leaked\n"),
        scripted.toolUse("Read", { file_path: "private.env" }),
        scripted.write("notes.txt", "fine\n"),
        scripted.text("Done."),
      ],
    });
    writeFileSync(join(cwd, "private.env"), "TOKEN=1\n");
    const result = await startAgent({
      agent: "claude",
      binary: claude,
      prompt: "Write the files.",
      cwd,
      env,
      disallowedTools: restrictionsToDisallowedTools([
        { block: "write", pattern: "secrets/**" },
        { block: "read", pattern: "private.env" },
      ]),
    }).done;
    expect(existsSync(join(cwd, "secrets/key.txt"))).toBe(false);
    expect(readFileSync(join(cwd, "notes.txt"), "utf8")).toBe("fine\n");
    expect(result.progress.toolErrors).toBe(2);
    // The CLI reports the paths it refused as absolute paths.
    expect(result.progress.permissionDenials.map((denial) => denial.action)).toEqual([
      `Write ${join(cwd, "secrets/key.txt")}`,
      `Read ${join(cwd, "private.env")}`,
    ]);
  });
});
