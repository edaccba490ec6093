import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../../vitest.load-budget";
import { probeAcpAgent } from "./acp-session";
import { processGroupAlive, runLeftovers } from "./process-group";
import { startAgent } from "./start-agent";
import { gitIdentity as identity, ScratchFolders } from "./test-support";

/**
 * The real ACP agent of the devDependency, Zed's adapter for Claude Code, running the repository's
 * pinned Claude Code CLI (through CLAUDE_CODE_EXECUTABLE), driven by the scripted model.
 */
const modules = join(import.meta.dirname, "..", "node_modules");
const claudeCodeAcp = join(modules, ".bin", "claude-code-acp");
const claudeExecutable = realpathSync(join(modules, "@anthropic-ai", "claude-code", "bin", "claude.exe"));
const acpCommand = { command: [claudeCodeAcp], protocol: "acp" as const };
const scratch = new ScratchFolders();
const models: ScriptedModel[] = [];

afterEach(async () => {
  for (const model of models.splice(0)) await model.close();
  scratch.removeAll();
});

async function scriptedSetup(options: Parameters<typeof startScriptedModel>[0]) {
  const model = await startScriptedModel(options);
  models.push(model);
  const home = scratch.folder("agent-runner-acp-home-");
  const env = {
    ...model.claudeEnv(home),
    ...identity,
    CLAUDE_CODE_MAX_RETRIES: "0",
    CLAUDE_CODE_EXECUTABLE: claudeExecutable,
    // The adapter offers Claude Code's bypass mode when this is set, which the CLI refuses as root.
    IS_SANDBOX: undefined,
  };
  return { model, env, cwd: scratch.repository() };
}

describe("startAgent with a real ACP agent (claude-code-acp over Claude Code and the scripted model)", () => {
  it("opens a session in the working directory, grants the edit and the commit, and reports the final text", async () => {
    const { model, env, cwd } = await scriptedSetup({
      script: [
        scripted.write("src/greeting.ts", 'export const greeting = "hello";\n'),
        scripted.bash("git add src/greeting.ts && git commit -m 'Add greeting'", "Commit the greeting"),
        scripted.text("Added src/greeting.ts and committed it."),
      ],
    });
    const streamFile = join(scratch.folder("agent-runner-acp-stream-"), "session.jsonl");
    const log: string[] = [];
    const agent = startAgent({
      agent: "claude-acp",
      command: acpCommand,
      prompt: "Add a greeting module and commit it.",
      cwd,
      env,
      streamFile,
      onLog: (line) => log.push(line),
    });
    const result = await agent.done;
    expect(result.failure).toBeUndefined();
    expect(readFileSync(join(cwd, "src/greeting.ts"), "utf8")).toContain("hello");
    expect(result.git?.commitCount).toBe(1);
    expect(result.git?.commits[0]?.subject).toBe("Add greeting");
    expect(result.result).toMatchObject({
      subtype: "success",
      isError: false,
      stopReason: "end_turn",
      text: "Added src/greeting.ts and committed it.",
      permissionDenials: 0,
    });
    expect(result.progress.sessionId).toMatch(/[0-9a-f-]{36}/);
    expect(result.progress.toolUses).toBeGreaterThanOrEqual(2);
    expect(result.progress.toolUseCounts).toMatchObject({ edit: 1, execute: 1 });
    expect(log.some((line) => line.startsWith("permission granted: Bash: git add"))).toBe(true);
    expect(model.agentRequests()[0]!.firstUserText).toContain("Add a greeting module");
    // The kept output is the agent's side of the conversation, one JSON-RPC message a line.
    const kept = readFileSync(streamFile, "utf8").trim().split("\n");
    expect(kept.some((line) => JSON.parse(line).method === "session/update")).toBe(true);
    expect(processGroupAlive(agent.pid!)).toBe(false);
  });

  it("reports the usage the real adapter's prompt answer carries, and no usage or cost it does not report", async () => {
    const { env, cwd } = await scriptedSetup({ script: [scripted.text("Nothing to change.")] });
    const streamFile = join(scratch.folder("agent-runner-acp-usage-"), "session.jsonl");
    const result = await startAgent({
      agent: "claude-acp",
      command: acpCommand,
      prompt: "Say there is nothing to change.",
      cwd,
      env,
      streamFile,
    }).done;
    expect(result.failure).toBeUndefined();
    // The agent's answer to session/prompt, as it was sent.
    const answer = readFileSync(streamFile, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { result?: { stopReason?: string; usage?: unknown } })
      .find((message) => message.result?.stopReason !== undefined)?.result;
    expect(answer?.stopReason).toBe("end_turn");
    // claude-code-acp 0.16 answers with the stop reason alone: no usage and no cost, so none is
    // reported; an adapter that sends the protocol's `usage` has it carried as sent.
    expect(result.progress.usage).toEqual(answer?.usage);
    expect(result.result?.usage).toEqual(answer?.usage);
    expect(result.progress.costUsd).toBeUndefined();
    expect(result.result?.costUsd).toBeUndefined();
  });

  it("refuses a restricted command's permission request and says so, with the reason, in the report", async () => {
    const { env, cwd } = await scriptedSetup({
      script: [
        scripted.bash("curl -s https://example.com/install.sh", "Fetch the installer"),
        scripted.text("I could not fetch the installer."),
      ],
    });
    const log: string[] = [];
    const result = await startAgent({
      agent: "claude-acp",
      command: acpCommand,
      prompt: "Fetch the installer.",
      cwd,
      env,
      disallowedTools: ["Bash(curl:*)"],
      onLog: (line) => log.push(line),
    }).done;
    expect(result.progress.permissionDenials).toHaveLength(1);
    expect(result.progress.permissionDenials[0]!.action).toContain("curl -s https://example.com/install.sh");
    expect(result.result?.text).toContain("Refused by the dispatch's permission policy");
    expect(result.result?.text).toContain("matches the refused pattern Bash(curl:*)");
    expect(log.some((line) => line.startsWith("permission refused: Bash: curl"))).toBe(true);
  });

  it("in plan mode sets the agent's read-only mode and refuses an edit, which stays unwritten", async () => {
    const { env, cwd } = await scriptedSetup({
      script: [scripted.write("plan-note.md", "changed\n"), scripted.text("Here is the plan.")],
    });
    const log: string[] = [];
    const result = await startAgent({
      agent: "claude-acp",
      command: acpCommand,
      prompt: "Plan the change.",
      cwd,
      env,
      planOnly: true,
      onLog: (line) => log.push(line),
    }).done;
    expect(existsSync(join(cwd, "plan-note.md"))).toBe(false);
    expect(log).toContain("plan mode: the agent's read-only mode plan is set");
    expect(result.progress.permissionDenials).toHaveLength(1);
    expect(result.result?.text).toContain("plan mode: nothing may change until the plan is approved");
  });

  it("refuses a command no grant covers, naming the part that is not granted", async () => {
    const { env, cwd } = await scriptedSetup({
      script: [scripted.bash("git status && npm install left-pad", "Install"), scripted.text("Done.")],
    });
    const result = await startAgent({
      agent: "claude-acp",
      command: acpCommand,
      prompt: "Install left-pad.",
      cwd,
      env,
    }).done;
    expect(result.result?.text).toContain(
      "`npm install left-pad` is not among the commands this dispatch may run",
    );
    expect(existsSync(join(cwd, "node_modules"))).toBe(false);
  });

  it("cancels mid-run with session/cancel, then the process group: nothing of the run is left", async () => {
    const { model, env, cwd } = await scriptedSetup({ script: [scripted.hang()] });
    const agent = startAgent({
      agent: "claude-acp",
      command: acpCommand,
      prompt: "Wait for the model.",
      cwd,
      env,
      killGraceMs: 2_000,
    });
    await waitUntil(() => (model.hangingCount() > 0 ? true : undefined), {
      idleMs: 30_000,
      what: "the agent's request to the model",
    });
    await agent.cancel("cancel requested");
    const result = await agent.done;
    expect(result.cancelled).toBe(true);
    expect(result.failure?.kind).toBe("cancelled");
    expect(processGroupAlive(agent.pid!)).toBe(false);
    expect(runLeftovers({ sessionId: agent.pid!, marker: "none=none" })).toEqual([]);
  });

  it("classifies an API authentication failure the agent reports as a JSON-RPC error", async () => {
    const { env, cwd } = await scriptedSetup({ script: [scripted.unauthorized()] });
    const result = await startAgent({
      agent: "claude-acp",
      command: acpCommand,
      prompt: "Do something.",
      cwd,
      env,
    }).done;
    expect(result.failure?.kind).toBe("auth");
  });

  it("stops a turn that runs past its time limit: cancel first, then the group; nothing is left", async () => {
    const { env, cwd } = await scriptedSetup({ script: [scripted.hang()] });
    const agent = startAgent({
      agent: "claude-acp",
      command: acpCommand,
      prompt: "Wait for the model.",
      cwd,
      env,
      timeoutMs: 4_000,
      killGraceMs: 2_000,
    });
    const result = await agent.done;
    expect(result.timedOut).toBe(true);
    expect(result.failure?.kind).toBe("timeout");
    expect(processGroupAlive(agent.pid!)).toBe(false);
  });

  it("classifies a rate limit the agent reports in its JSON-RPC error as retryable", async () => {
    const { env, cwd } = await scriptedSetup({ script: [scripted.rateLimited()] });
    const result = await startAgent({
      agent: "claude-acp",
      command: acpCommand,
      prompt: "Do something.",
      cwd,
      env,
    }).done;
    expect(result.result?.isError).toBe(true);
    expect(result.failure).toMatchObject({ kind: "rate_limit", retryable: true });
  });

  it("classifies an agent that is not there as a spawn error", async () => {
    const result = await startAgent({
      agent: "claude-acp",
      command: { command: [join(scratch.folder("agent-runner-acp-none-"), "missing")], protocol: "acp" },
      prompt: "x",
      cwd: scratch.folder("agent-runner-acp-cwd-"),
    }).done;
    expect(result.failure?.kind).toBe("spawn_error");
  });
});

describe("probeAcpAgent", () => {
  it("starts the real adapter and gets its answer to initialize", async () => {
    const probe = await probeAcpAgent({
      command: [claudeCodeAcp],
      cwd: scratch.folder("agent-runner-acp-probe-"),
      env: { ...process.env, CLAUDE_CODE_EXECUTABLE: claudeExecutable },
    });
    expect(probe).toMatchObject({
      ok: true,
      protocolVersion: 1,
      name: "@zed-industries/claude-code-acp",
      loadSession: true,
    });
  });

  it("says why a program that is no ACP agent fails", async () => {
    const exits = await probeAcpAgent({
      command: ["sh", "-c", "echo nope >&2; exit 3"],
      cwd: scratch.folder("agent-runner-acp-probe-"),
    });
    expect(exits).toEqual({ ok: false, error: "sh exited with code 3 before answering: nope" });
    // The last line comes after a pipe's worth of output, and a process left behind keeps the
    // pipe open: the reason is still the last line, and the probe does not wait for the leftover.
    const leftover = await probeAcpAgent({
      command: [
        "sh",
        "-c",
        "sleep 60 & head -c 300000 /dev/zero | tr '\\0' x >&2; echo >&2; echo late >&2; exit 4",
      ],
      cwd: scratch.folder("agent-runner-acp-probe-"),
      timeoutMs: 60_000,
    });
    expect(leftover).toEqual({ ok: false, error: "sh exited with code 4 before answering: late" });
    const missing = await probeAcpAgent({
      command: ["/nonexistent/agent"],
      cwd: scratch.folder("agent-runner-acp-probe-"),
    });
    expect(missing.ok).toBe(false);
    expect(!missing.ok && missing.error).toContain("could not start /nonexistent/agent");
  });
});
