import { type ChildProcess, execFile, spawn } from "node:child_process";
import { appendFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { dispatchCommand, makeWorld, type TestWorld, waitFor } from "../test-support";
import { describeStreamLine } from "./session-log";

const packageDir = join(import.meta.dirname, "..", "..");
let world: TestWorld;
const children: ChildProcess[] = [];

beforeEach(async () => {
  world = await makeWorld();
});
afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  await world.cleanup();
});

const toolUse = (name: string, input: unknown) =>
  JSON.stringify({ type: "assistant", message: { content: [{ type: "tool_use", name, input }] } });
const text = (words: string) =>
  JSON.stringify({ type: "assistant", message: { content: [{ type: "text", text: words }] } });

describe("describeStreamLine", () => {
  it("says what the agent did, from Claude Code's, Codex's and ACP agents' streams, and nothing for the rest", () => {
    expect(describeStreamLine(toolUse("Bash", { command: "git commit -m 'Add notes'" }))).toEqual([
      "▶ Bash: git commit -m 'Add notes'",
    ]);
    expect(describeStreamLine(text("Done: notes added.\nMore detail"))).toEqual(["  Done: notes added."]);
    expect(
      describeStreamLine(JSON.stringify({ type: "result", is_error: false, result: "All set" })),
    ).toEqual(["■ finished: All set"]);
    expect(
      describeStreamLine(
        JSON.stringify({ type: "item.completed", item: { type: "command_execution", command: "npm test" } }),
      ),
    ).toEqual(["▶ Bash: npm test"]);
    const acp = (update: Record<string, unknown>) =>
      JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s", update } });
    expect(describeStreamLine(acp({ sessionUpdate: "tool_call", title: "Write", rawInput: {} }))).toEqual([]);
    expect(
      describeStreamLine(
        acp({ sessionUpdate: "tool_call", title: "Write a.ts", rawInput: { file_path: "a.ts" } }),
      ),
    ).toEqual(["▶ Write a.ts"]);
    expect(
      describeStreamLine(
        acp({ sessionUpdate: "tool_call", title: "`git status`", rawInput: { command: "git status" } }),
      ),
    ).toEqual(["▶ Bash: git status"]);
    expect(
      describeStreamLine(acp({ sessionUpdate: "agent_message_chunk", content: { type: "text" } })),
    ).toEqual([]);
    expect(
      describeStreamLine(JSON.stringify({ jsonrpc: "2.0", id: 2, result: { stopReason: "end_turn" } })),
    ).toEqual(["■ finished"]);
    expect(
      describeStreamLine(
        JSON.stringify({ jsonrpc: "2.0", id: 2, error: { code: -32603, message: "Internal error" } }),
      ),
    ).toEqual(["■ ended with an error: Internal error"]);
    expect(describeStreamLine('{"type":"system","subtype":"init"}')).toEqual([]);
    expect(describeStreamLine("not json")).toEqual([]);
  });
});

describe("gstack-dispatch logs", { timeout: loadBudget(60_000) }, () => {
  const id = "dispatch-logs-1";

  it("prints the actions of every attempt, then the report", async () => {
    const session = world.layout.dispatch.sessionDir(id);
    await mkdir(session, { recursive: true });
    await writeFile(join(session, "stream-1.jsonl"), `${toolUse("Read", { file_path: "README.md" })}\n`);
    await writeFile(join(session, "stream-2.jsonl"), `${toolUse("Bash", { command: "git commit -m x" })}\n`);
    await mkdir(world.layout.dispatch.completed, { recursive: true });
    await writeFile(world.layout.dispatch.completedReport(id), "# Report\n\nWhat shipped: x\n");
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [...dispatchCommand(), "logs", id, "--root", world.root],
        { cwd: packageDir, env: { ...process.env, NO_COLOR: "1" } },
        (error, out) => (error ? reject(error) : resolve(out)),
      ),
    );
    expect(stdout).toBe("▶ Read README.md\n▶ Bash: git commit -m x\n\n# Report\n\nWhat shipped: x\n");
  });

  it("with --follow, prints actions as they are written and stops at the report", async () => {
    const session = world.layout.dispatch.sessionDir(id);
    await mkdir(session, { recursive: true });
    const stream = join(session, "stream-1.jsonl");
    await writeFile(stream, `${toolUse("Read", { file_path: "a.ts" })}\n`);
    const child = spawn(
      process.execPath,
      [...dispatchCommand(), "logs", id, "--follow", "--root", world.root],
      {
        cwd: packageDir,
        env: { ...process.env, NO_COLOR: "1" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    children.push(child);
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    await waitFor(() => (output.includes("▶ Read a.ts") ? true : undefined));
    // A line written in two pieces is printed once it is whole.
    const line = toolUse("Edit", { file_path: "b.ts" });
    await appendFile(stream, line.slice(0, 20));
    await appendFile(stream, `${line.slice(20)}\n`);
    await waitFor(() => (output.includes("▶ Edit b.ts") ? true : undefined));
    await mkdir(world.layout.dispatch.completed, { recursive: true });
    await writeFile(world.layout.dispatch.completedReport(id), "# Report\n");
    expect(await exited).toBe(0);
    expect(output).toBe("▶ Read a.ts\n▶ Edit b.ts\n\n# Report\n");
  });

  it("says so in one line for a dispatch that never ran here", async () => {
    const failure = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(
        process.execPath,
        [...dispatchCommand(), "logs", "dispatch-unknown", "--root", world.root],
        { cwd: packageDir },
        (error, _out, stderr) => resolve({ code: error ? Number(error.code) : 0, stderr }),
      ),
    );
    expect(failure.code).toBe(1);
    expect(failure.stderr).toMatch(/^gstack-dispatch: no dispatch dispatch-unknown has run here/);
  });
});
