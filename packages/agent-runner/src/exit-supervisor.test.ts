import { spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { processAlive } from "@gstack/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../../vitest.load-budget";
import { readSupervisedExit, SUPERVISOR_SOURCE } from "./exit-supervisor";
import { processGroupAlive } from "./process-group";
import { recordedRunResult } from "./recorded-run";
import { startAgent } from "./start-agent";
import { ScratchFolders } from "./test-support";

const scratch = new ScratchFolders();
afterEach(() => scratch.removeAll());

/**
 * Codex-style events, then the exit code the prompt names; `wait FILE` first waits for FILE to
 * exist; `big` says 8 MB, more than any pipe or socket buffer holds.
 */
const program = `
import { existsSync, writeFileSync } from "node:fs";
const [, , prompt] = process.argv;
const emit = (event) => process.stdout.write(JSON.stringify(event) + "\\n");
const [verb, arg, code] = prompt.split(" ");
const go = () => {
  emit({ type: "thread.started", thread_id: "thread-9" });
  emit({ type: "item.completed", item: { id: "1", type: "agent_message", text: "x".repeat(verb === "big" ? 8000000 : 200000) } });
  emit({ type: "item.completed", item: { id: "2", type: "agent_message", text: "finished " + prompt } });
  emit({ type: "turn.completed", usage: { input_tokens: 1, output_tokens: 1 } });
  process.stderr.write("some stderr\\n");
  process.exitCode = Number(code ?? 0);
};
if (verb === "wait") {
  writeFileSync(arg + ".started", String(process.pid));
  const timer = setInterval(() => { if (existsSync(arg)) { clearInterval(timer); go(); } }, 20);
} else go();
`;

function agentFile(): string {
  const file = join(scratch.folder("supervised-agent-bin-"), "agent.mjs");
  writeFileSync(file, program);
  return file;
}

describe("an agent run under its exit supervisor", () => {
  it("records the exit and keeps the output, and the recorded run reads as the live one", async () => {
    const folder = scratch.folder("supervised-");
    const streamFile = join(folder, "stream.jsonl");
    const exitFile = join(folder, "exit.json");
    const agent = startAgent({
      agent: "codex",
      prompt: "go - 3",
      cwd: folder,
      command: { command: [process.execPath, agentFile(), "{prompt}"] },
      streamFile,
      exitFile,
    });
    const live = await agent.done;
    expect(live.exitCode).toBe(3);
    expect(live.stderrTail).toContain("some stderr");
    // The last 64 KiB of stdout, held in memory as well.
    expect(live.outputTail).toContain("finished go - 3");
    expect(Buffer.byteLength(live.outputTail ?? "")).toBe(64 * 1024);
    const record = readSupervisedExit(exitFile);
    expect(record).toMatchObject({ exit_code: 3, signal: null, stream_truncated: false });
    expect(record?.stopped).toBeUndefined();
    expect(record?.stream_bytes).toBe(readFileSync(streamFile).length);
    expect(live.streamFile?.bytes).toBe(record?.stream_bytes);
    expect(readFileSync(streamFile, "utf8")).toContain("finished go - 3");
    const recorded = recordedRunResult({
      agent: "codex",
      command: { command: [process.execPath, "agent.mjs", "{prompt}"] },
      streamFile,
      exit: record!,
      startedAt: live.startedAt,
    });
    expect(recorded.exitCode).toBe(live.exitCode);
    expect(recorded.progress.lastAssistantText).toBe(live.progress.lastAssistantText);
    expect(recorded.failure?.kind).toBe(live.failure?.kind);
  });

  it("hands its reader every byte, however late the reader reads, before it ends", async () => {
    const folder = scratch.folder("supervised-late-reader-");
    const streamFile = join(folder, "stream.jsonl");
    const exitFile = join(folder, "exit.json");
    const supervisor = spawn(
      process.execPath,
      [
        "-e",
        SUPERVISOR_SOURCE,
        exitFile,
        streamFile,
        String(64 * 1024 * 1024),
        process.execPath,
        agentFile(),
        "big - 3",
      ],
      { cwd: folder, stdio: ["ignore", "pipe", "ignore"], detached: true },
    );
    const ended = new Promise<number | null>((resolve) => supervisor.once("exit", (code) => resolve(code)));
    // Nothing is read until the agent has ended and its end is recorded: more than the pipe
    // holds is still waiting in the supervisor then. (The listener is there from the start, held
    // paused, so nothing read at the supervisor's exit could pass by it.)
    const chunks: Buffer[] = [];
    supervisor.stdout.pause();
    supervisor.stdout.on("data", (chunk: Buffer) => chunks.push(chunk));
    const record = await waitUntil(() => readSupervisedExit(exitFile), {
      idleMs: 10_000,
      what: "the exit record",
    });
    expect(chunks).toEqual([]);
    supervisor.stdout.resume();
    expect(await ended).toBe(3);
    await new Promise((resolve) =>
      supervisor.stdout.readableEnded ? resolve(undefined) : supervisor.stdout.once("end", resolve),
    );
    const passed = Buffer.concat(chunks);
    expect(passed.length).toBe(record.stream_bytes);
    expect(passed.equals(readFileSync(streamFile))).toBe(true);
    expect(passed.toString("utf8")).toContain("finished big - 3");
  });

  it("lets the agent finish and records it when nobody reads its output any more", async () => {
    const folder = scratch.folder("supervised-orphan-");
    const streamFile = join(folder, "stream.jsonl");
    const exitFile = join(folder, "exit.json");
    const go = join(folder, "go");
    // The supervisor as a daemon starts it, whose end is played by closing the pipes it reads.
    const supervisor = spawn(
      process.execPath,
      [
        "-e",
        SUPERVISOR_SOURCE,
        exitFile,
        streamFile,
        String(64 * 1024 * 1024),
        process.execPath,
        agentFile(),
        `wait ${go} 0`,
      ],
      { cwd: folder, stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    await waitUntil(() => existsSync(`${go}.started`) || undefined, {
      idleMs: 10_000,
      what: "the agent to start",
    });
    supervisor.stdout.destroy();
    supervisor.stderr.destroy();
    writeFileSync(go, "");
    await waitUntil(() => readSupervisedExit(exitFile), { idleMs: 10_000, what: "the exit record" });
    expect(readSupervisedExit(exitFile)).toMatchObject({ exit_code: 0, signal: null });
    expect(readFileSync(streamFile, "utf8")).toContain(`finished wait ${go} 0`);
  });

  it("stops the whole group on cancel and records that it was stopped", async () => {
    const folder = scratch.folder("supervised-cancel-");
    const exitFile = join(folder, "exit.json");
    const go = join(folder, "go");
    const agent = startAgent({
      agent: "codex",
      prompt: `wait ${go} 0`,
      cwd: folder,
      command: { command: [process.execPath, agentFile(), "{prompt}"] },
      streamFile: join(folder, "stream.jsonl"),
      exitFile,
      killGraceMs: 10_000,
    });
    await waitUntil(() => existsSync(`${go}.started`) || undefined, {
      idleMs: 10_000,
      what: "the agent to start",
    });
    const agentPid = Number(readFileSync(`${go}.started`, "utf8"));
    await agent.cancel("cancel");
    const result = await agent.done;
    expect(result.cancelled).toBe(true);
    expect(processGroupAlive(agent.pid!)).toBe(false);
    expect(processAlive(agentPid)).toBe(false);
    expect(readSupervisedExit(exitFile)).toMatchObject({ stopped: "SIGTERM", signal: "SIGTERM" });
  });

  it("writes no record when the supervisor itself is killed outright", async () => {
    const folder = scratch.folder("supervised-killed-");
    const exitFile = join(folder, "exit.json");
    const go = join(folder, "go");
    const agent = startAgent({
      agent: "codex",
      prompt: `wait ${go} 0`,
      cwd: folder,
      command: { command: [process.execPath, agentFile(), "{prompt}"] },
      exitFile,
    });
    await waitUntil(() => existsSync(`${go}.started`) || undefined, {
      idleMs: 10_000,
      what: "the agent to start",
    });
    process.kill(agent.pid!, "SIGKILL");
    const result = await agent.done;
    expect(result.signal).toBe("SIGKILL");
    expect(existsSync(exitFile)).toBe(false);
  });

  it("reports a program that cannot be started as a spawn error", async () => {
    const folder = scratch.folder("supervised-missing-");
    const exitFile = join(folder, "exit.json");
    const result = await startAgent({
      agent: "codex",
      prompt: "go",
      cwd: folder,
      command: { command: [join(folder, "no-such-agent"), "{prompt}"] },
      exitFile,
    }).done;
    expect(result.failure?.kind).toBe("spawn_error");
    expect(readSupervisedExit(exitFile)?.spawn_error).toContain("ENOENT");
  });
});
