import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../../vitest.load-budget";
import { processGroupAlive, processGroupMembers } from "./process-group";
import { startAgent } from "./start-agent";
import { gitIdentity as identity, ScratchFolders } from "./test-support";

interface ProcEntry {
  pid: number;
  parentPid: number;
  processGroupId: number;
  sessionId: number;
}

/** Live `sleep <duration>` processes, read from /proc; a unique duration tells a test's own apart. */
function processesWith(tag: string): ProcEntry[] {
  const found: ProcEntry[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, "utf8") !== `sleep\0${tag}\0`) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z" || fields[0] === "X") continue;
      found.push({
        pid: Number(entry),
        parentPid: Number(fields[1]),
        processGroupId: Number(fields[2]),
        sessionId: Number(fields[3]),
      });
    } catch {}
  }
  return found;
}

let durations = 0;
/** A sleep duration no other process on the machine is likely to use. */
function uniqueDuration(): string {
  durations += 1;
  return `1000.${process.pid}${durations}${Date.now() % 100_000}`;
}

async function waitForProcess(tag: string): Promise<ProcEntry[]> {
  return waitUntil(
    () => {
      const found = processesWith(tag);
      return found.length > 0 ? found : undefined;
    },
    { idleMs: 5_000, what: `a process with ${tag}` },
  );
}

const scratch = new ScratchFolders();
afterEach(() => scratch.removeAll());

/** Writes a small program standing in for an agent CLI and returns its path. */
function agentProgram(source: string): string {
  const file = join(scratch.folder("command-agent-bin-"), "agent.mjs");
  writeFileSync(file, source);
  return file;
}

/** Prints Codex `exec --json` style events and really edits and commits in its working directory. */
const codexLike = `
import { execFileSync } from "node:child_process";
import { writeFileSync, readFileSync } from "node:fs";
const prompt = process.argv[2];
const emit = (event) => process.stdout.write(JSON.stringify(event) + "\\n");
const stdin = readFileSync(0, "utf8");
emit({ type: "thread.started", thread_id: "thread-123" });
emit({ type: "turn.started" });
emit({ type: "item.completed", item: { id: "1", type: "agent_message", text: "Working on: " + prompt } });
writeFileSync("notes.md", "# Notes\\n");
emit({ type: "item.completed", item: { id: "2", type: "file_change", changes: [{ path: "notes.md", kind: "add" }] } });
execFileSync("git", ["add", "notes.md"]);
execFileSync("git", ["commit", "-q", "-m", "Add notes"]);
emit({ type: "item.completed", item: { id: "3", type: "command_execution", command: "git commit -m 'Add notes'", exit_code: 0 } });
emit({ type: "item.completed", item: { id: "4", type: "agent_message", text: "Added notes.md (stdin had " + stdin.length + " bytes)" } });
emit({ type: "turn.completed", usage: { input_tokens: 10, output_tokens: 5 } });
`;

describe("startAgent with a configured command (Codex-style JSON lines)", () => {
  it("runs the program in the project with /dev/null as stdin and follows its events and commits", async () => {
    const cwd = scratch.repository("command-agent-repo-");
    const program = agentProgram(codexLike);
    const agent = startAgent({
      agent: "codex",
      prompt: "write notes",
      cwd,
      env: identity,
      command: { command: [process.execPath, program, "{prompt}"] },
    });
    const result = await agent.done;
    expect(result.failure).toBeUndefined();
    expect(result.exitCode).toBe(0);
    expect(result.agent).toBe("codex");
    expect(result.progress).toMatchObject({
      sessionId: "thread-123",
      turns: 1,
      toolUses: 2,
      toolUseCounts: { Edit: 1, Bash: 1 },
      lastAction: "Bash: git commit -m 'Add notes'",
      lastAssistantText: "Added notes.md (stdin had 0 bytes)",
    });
    expect(result.git).toMatchObject({ commitCount: 1, branch: "main" });
    expect(readFileSync(join(cwd, "notes.md"), "utf8")).toBe("# Notes\n");
  });

  it("starts a configured command without asking git, which that command line never uses", async () => {
    const cwd = scratch.repository("command-agent-repo-");
    const shims = scratch.folder("command-agent-shims-");
    const calls = join(shims, "calls");
    writeFileSync(join(shims, "git"), `#!/bin/sh\necho "$@" >> '${calls}'\nexit 1\n`, { mode: 0o755 });
    const program = agentProgram(`console.log(JSON.stringify(process.argv.slice(2)));`);
    const path = process.env.PATH;
    process.env.PATH = `${shims}:${path}`;
    try {
      const result = await startAgent({
        agent: "codex",
        prompt: "x",
        cwd,
        trackGit: false,
        command: { command: [process.execPath, program, "{prompt}"] },
      }).done;
      expect(result.exitCode).toBe(0);
      expect(result.progress.lastAssistantText).toBe('["x"]');
      expect(existsSync(calls)).toBe(false);
      // The built-in Codex command line does ask git, for the sandbox's writable roots.
      await startAgent({ agent: "codex", binary: program, prompt: "x", cwd, trackGit: false }).done;
      expect(readFileSync(calls, "utf8")).toContain("rev-parse");
    } finally {
      process.env.PATH = path;
    }
  });

  it("classifies a failed turn from the agent's JSON", async () => {
    const program = agentProgram(`
      process.stdout.write(JSON.stringify({ type: "turn.failed", error: { message: "stream error: 429 Too Many Requests" } }) + "\\n");
      process.exit(1);
    `);
    const result = await startAgent({
      agent: "codex",
      prompt: "x",
      cwd: scratch.folder("command-agent-cwd-"),
      command: { command: [process.execPath, program] },
    }).done;
    expect(result.result).toMatchObject({ isError: true, text: "stream error: 429 Too Many Requests" });
    expect(result.failure).toMatchObject({ kind: "rate_limit", evidence: "prose" });
    expect(result.git).toBeUndefined();
  });

  it("reports output that came within the progress interval once the interval is over, while the agent is quiet", async () => {
    // A first event, then (within the interval) the session id, then nothing until it is stopped:
    // as an agent that gives its session id just before it waits on its model.
    const program = agentProgram(`
      const say = (event) => process.stdout.write(JSON.stringify(event) + "\\n");
      say({ type: "item.completed", item: { type: "agent_message", text: "starting" } });
      setTimeout(() => say({ type: "thread.started", thread_id: "thread-said-last" }), 50);
      setInterval(() => undefined, 1000);
    `);
    const reported: Array<string | undefined> = [];
    const agent = startAgent({
      agent: "custom",
      prompt: "x",
      cwd: scratch.folder("command-agent-cwd-"),
      trackGit: false,
      command: { command: [process.execPath, program, "{prompt}"] },
      progressIntervalMs: 2_000,
      onProgress: (progress) => reported.push(progress.sessionId),
    });
    try {
      await waitUntil(() => (reported.includes("thread-said-last") ? true : undefined), {
        idleMs: 20_000,
        what: "the session id reported while the agent is quiet",
        lastSeen: () => JSON.stringify(reported),
      });
    } finally {
      await agent.cancel("test");
      await agent.done;
    }
  });

  it("reads plain-text output and classifies a bare non-zero exit as a logic error", async () => {
    const program = agentProgram(
      `console.log("thinking"); console.log("giving up"); console.error("fatal: no plan"); process.exit(3);`,
    );
    const result = await startAgent({
      agent: "custom",
      prompt: "x",
      cwd: scratch.folder("command-agent-cwd-"),
      command: { command: [process.execPath, program, "{prompt}"] },
    }).done;
    expect(result.progress.lastAssistantText).toBe("giving up");
    expect(result.stderrTail).toContain("fatal: no plan");
    expect(result.failure).toMatchObject({ kind: "logic_error", retryable: false });
    expect(result.exitCode).toBe(3);
  });

  it("reports a program that cannot start as spawn_error", async () => {
    const agent = startAgent({
      agent: "custom",
      prompt: "x",
      cwd: scratch.folder("command-agent-cwd-"),
      command: { command: ["/nonexistent/agent-binary"] },
    });
    expect(agent.pid).toBeUndefined();
    const result = await agent.done;
    expect(result.failure).toMatchObject({ kind: "spawn_error", retryable: false });
    expect(result.failure?.message).toContain("/nonexistent/agent-binary");
  });

  it("skips over-long output lines without keeping them, and parses the lines around them", async () => {
    const program = agentProgram(`
      const emit = (event) => process.stdout.write(JSON.stringify(event) + "\\n");
      emit({ type: "message", role: "assistant", content: "before" });
      process.stdout.write("x".repeat(300000) + "\\n");
      emit({ type: "message", role: "assistant", content: "after" });
    `);
    const events: unknown[] = [];
    const result = await startAgent({
      agent: "gemini",
      prompt: "x",
      cwd: scratch.folder("command-agent-cwd-"),
      command: { command: [process.execPath, program] },
      maxLineLength: 64 * 1024,
      onEvent: (event) => events.push(event),
    }).done;
    expect(result.progress).toMatchObject({ skippedLines: 1, lastAssistantText: "after", turns: 2 });
    expect(result.progress.outputBytes).toBeGreaterThan(300_000);
    expect(events).toHaveLength(2);
  });

  it("stops what the agent left running in its group once the agent itself exits", async () => {
    const cwd = scratch.folder("command-agent-cwd-");
    const result = startAgent({
      agent: "custom",
      prompt: "x",
      cwd,
      command: { command: ["sh", "-c", "sleep 120 >/dev/null 2>&1 & echo started; exit 0"] },
      killGraceMs: 1_000,
    });
    const finished = await result.done;
    expect(finished.failure).toBeUndefined();
    expect(processGroupMembers(result.pid!)).toEqual([]);
    expect(processGroupAlive(result.pid!)).toBe(false);
  });

  it("stops a background job the agent moved into a process group of its own, after the agent exits", async () => {
    const cwd = scratch.folder("command-agent-cwd-");
    const tag = uniqueDuration();
    const result = startAgent({
      agent: "custom",
      prompt: "x",
      cwd,
      // With `set -m`, bash gives each background job its own process group, as an interactive shell does.
      command: {
        command: ["bash", "-c", `set -m; sleep ${tag} >/dev/null 2>&1 & echo started; sleep 1; exit 0`],
      },
      killGraceMs: 1_000,
    });
    // Seen running before the run ends, in a group other than the agent's.
    const seen = await waitForProcess(tag);
    expect(seen.some((entry) => entry.processGroupId !== result.pid)).toBe(true);
    const finished = await result.done;
    expect(finished.failure).toBeUndefined();
    expect(processesWith(tag)).toEqual([]);
  });

  it("stops a double-forked child that left the agent's session with setsid, on exit, cancel and timeout", async () => {
    for (const how of ["exit", "cancel", "timeout"] as const) {
      const tag = uniqueDuration();
      const script =
        how === "exit"
          ? `(setsid sleep ${tag} >/dev/null 2>&1 &) ; sleep 1; exit 0`
          : `(setsid sleep ${tag} >/dev/null 2>&1 &) ; exec sleep 1000`;
      const result = startAgent({
        agent: "custom",
        prompt: "x",
        cwd: scratch.folder("command-agent-cwd-"),
        command: { command: ["sh", "-c", script] },
        killGraceMs: 1_000,
        ...(how === "timeout" ? { timeoutMs: 1_500 } : {}),
      });
      const seen = await waitForProcess(tag);
      // It really escaped: another session, and not a child of the agent.
      expect(seen.every((entry) => entry.sessionId !== result.pid && entry.parentPid !== result.pid)).toBe(
        true,
      );
      if (how === "cancel") await result.cancel("test");
      const finished = await result.done;
      expect(finished.cancelled).toBe(how === "cancel");
      expect(finished.timedOut).toBe(how === "timeout");
      expect(processesWith(tag)).toEqual([]);
    }
  });

  it("stops a child that left the session and cleared its environment, once seen while the run lived", async () => {
    const tag = uniqueDuration();
    const result = startAgent({
      agent: "custom",
      prompt: "x",
      cwd: scratch.folder("command-agent-cwd-"),
      // A direct child of the agent: found by the sampler through its parent, before the agent exits.
      command: { command: ["sh", "-c", `setsid env -i sleep ${tag} >/dev/null 2>&1 & sleep 2.5; exit 0`] },
      killGraceMs: 1_000,
    });
    const seen = await waitForProcess(tag);
    expect(seen.every((entry) => entry.sessionId !== result.pid)).toBe(true);
    const environment = readFileSync(`/proc/${seen[0]?.pid}/environ`, "latin1");
    expect(environment).not.toContain("GSTACK_AGENT_RUN");
    await result.done;
    expect(processesWith(tag)).toEqual([]);
  });

  it("keeps a capped copy of the raw output when asked", async () => {
    const program = agentProgram(`for (let i = 0; i < 1000; i++) console.log("line " + i);`);
    const streamFile = join(scratch.folder("command-agent-stream-"), "out.log");
    const result = await startAgent({
      agent: "custom",
      prompt: "x",
      cwd: scratch.folder("command-agent-cwd-"),
      command: { command: [process.execPath, program] },
      streamFile,
      streamFileMaxBytes: 100,
    }).done;
    expect(result.streamFile).toEqual({ path: streamFile, bytes: 100, truncated: true });
    expect(readFileSync(streamFile, "utf8")).toBe(
      Array.from({ length: 1000 }, (_, index) => `line ${index}\n`)
        .join("")
        .slice(0, 100),
    );
    expect(result.progress.lastAssistantText).toBe("line 999");
  });

  it("keeps following the run when a caller's callback throws", async () => {
    const program = agentProgram(
      `console.log(JSON.stringify({ type: "message", role: "assistant", content: "one" })); console.log("two");`,
    );
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    try {
      const result = await startAgent({
        agent: "custom",
        prompt: "x",
        cwd: scratch.folder("command-agent-cwd-"),
        command: { command: [process.execPath, program] },
        onEvent: () => {
          throw new Error("listener broke");
        },
      }).done;
      expect(result.failure).toBeUndefined();
      expect(result.progress.lastAssistantText).toBe("two");
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.some((message) => message.includes("listener broke"))).toBe(true);
    } finally {
      process.off("warning", onWarning);
    }
  });

  it("refuses a working directory that does not exist", () => {
    expect(() =>
      startAgent({
        agent: "custom",
        prompt: "x",
        cwd: "/nonexistent/project",
        command: { command: ["/bin/true"] },
      }),
    ).toThrow(/does not exist/);
  });

  it("finishes the run when the output copy cannot be written", async () => {
    const program = agentProgram(`console.log("working"); console.log("done");`);
    const result = await startAgent({
      agent: "custom",
      prompt: "x",
      cwd: scratch.folder("command-agent-cwd-"),
      command: { command: [process.execPath, program] },
      streamFile: "/nonexistent/folder/out.log",
    }).done;
    expect(result.failure).toBeUndefined();
    expect(result.progress.lastAssistantText).toBe("done");
    expect(result.streamFile?.error).toContain("ENOENT");
  });
});

describe("startAgent when the agent CLI itself fails", () => {
  async function runProgram(agent: "claude" | "codex", source: string) {
    const cwd = scratch.repository("command-agent-repo-");
    const program = agentProgram(source);
    return startAgent({
      agent,
      prompt: "x",
      cwd,
      trackGit: false,
      command: { command: [process.execPath, program, "{prompt}"] },
    }).done;
  }

  it("reports a CLI that dies on an uncaught error as crashed, not as the task's failure", async () => {
    const result = await runProgram("codex", `throw new TypeError("cannot read properties of undefined");`);
    expect(result.failure).toMatchObject({
      kind: "agent_crashed",
      retryable: false,
      evidence: "stderr:crash",
    });
    expect(result.failure?.message).toContain("The agent CLI crashed");
  });

  it("reports a CLI killed by a signal as crashed", async () => {
    const result = await runProgram("codex", `process.kill(process.pid, "SIGSEGV");`);
    expect(result.failure).toMatchObject({ kind: "agent_crashed", evidence: "signal=SIGSEGV" });
  });

  it("reports a Claude Code that exits without its final report as crashed", async () => {
    const result = await runProgram("claude", `process.exit(3);`);
    expect(result.failure).toMatchObject({ kind: "agent_crashed", evidence: "exit:no-result" });
  });

  it("says where the login must live when the CLI asks for one", async () => {
    const result = await runProgram(
      "claude",
      `process.stderr.write("Invalid API key · Please run /login\\n"); process.exit(1);`,
    );
    expect(result.failure?.kind).toBe("auth");
    expect(result.failure?.message).toContain("~/.claude/.credentials.json");
    expect(result.failure?.message).toContain("ANTHROPIC_API_KEY");
    expect(result.failure?.message).toContain("not only in a shell profile");
  });
});
