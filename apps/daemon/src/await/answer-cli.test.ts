import { execFile, execFileSync, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readState, submitDispatch } from "@gstack/daemon-client";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { Daemon } from "../daemon";
import { completionOf, dispatchCommand, makeWorld, type TestWorld, waitFor } from "../test-support";

const claude = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "claude");

let world: TestWorld;
let model: ScriptedModel | undefined;
let daemon: Daemon | undefined;
let home: string;

beforeEach(async () => {
  world = await makeWorld();
  home = await mkdtemp(join(tmpdir(), "gstack-claude-home-"));
  execFileSync("git", ["-C", world.repo, "config", "user.name", "Scripted Agent"]);
  execFileSync("git", ["-C", world.repo, "config", "user.email", "agent@example.invalid"]);
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await model?.close();
  model = undefined;
  await rm(home, { recursive: true, force: true });
  await world.cleanup();
});

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...dispatchCommand(), ...args, "--root", world.root],
      { cwd: join(import.meta.dirname, "..", "..") },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe("gstack-dispatch answer", { timeout: loadBudget(120_000) }, () => {
  it("says the daemon is not running and writes nothing", async () => {
    const result = await runCli(["answer", "dispatch-a", "approve"]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("the daemon is not running");
  });

  it("refuses a reply that does not parse before it reaches the daemon, then approves", async () => {
    model = await startScriptedModel({
      script: [
        scripted.text("## Plan\n1. Add cli.txt."),
        scripted.write("cli.txt", "from the plan\n"),
        scripted.bash("git add cli.txt"),
        scripted.bash("git commit -m 'Add cli.txt'"),
        scripted.text("Done.\n\n## What shipped\n- cli.txt"),
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
    const id = "dispatch-cli-answer";
    await submitDispatch(world.layout, {
      id,
      dispatched_by: "wintermute",
      task: "Add cli.txt",
      project: "acme-widget",
      project_dir: world.repo,
      mode: "plan",
    });
    const waiting = await waitFor(async () => {
      const state = await readState(world.layout, id);
      return state?.status === "awaiting" ? state : undefined;
    }, 90_000);
    const yes = await runCli(["answer", id, "yes"]);
    expect(yes.code).not.toBe(0);
    expect(yes.stderr).toContain('"yes" is not an answer');
    expect(yes.stderr).toContain(`gstack-dispatch answer ${id} approve`);
    const gateReply = await runCli(["answer", id, "all", "except", "d3b"]);
    expect(gateReply.stderr).toContain('"all except d3b" is not an answer to a plan');
    const stale = await runCli(["answer", id, "approve", "--round", "2"]);
    expect(stale.stderr).toContain("now waits on round 1");
    expect(await readState(world.layout, id)).toEqual(waiting);
    const approved = await runCli(["answer", id, "approve", "--round", "1"]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toContain(`${id}: approved plan 1`);
    expect(await waitFor(() => completionOf(world.layout, id), 90_000)).toMatchObject({
      status: "completed",
      commits: 1,
    });
  });

  it("logs and status show a waiting plan in full with the commands that answer it; the approved plan is one run", async () => {
    const plan = "## Plan\n1. Add shown.txt with one line.\n2. Commit it with the message 'Add shown.txt'.";
    model = await startScriptedModel({
      script: [
        scripted.text(plan),
        scripted.write("shown.txt", "from the plan\n"),
        scripted.bash("git add shown.txt"),
        scripted.bash("git commit -m 'Add shown.txt'"),
        scripted.text("Done.\n\n## What shipped\n- shown.txt"),
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
    const id = "dispatch-cli-shown";
    await submitDispatch(world.layout, {
      id,
      dispatched_by: "wintermute",
      task: "Add shown.txt",
      project: "acme-widget",
      project_dir: world.repo,
      mode: "plan",
    });
    await waitFor(async () => {
      const state = await readState(world.layout, id);
      return state?.status === "awaiting" ? state : undefined;
    }, 90_000);
    const commands = [
      `gstack-dispatch answer ${id} approve --round 1`,
      `gstack-dispatch answer ${id} revise "<what to change>" --round 1`,
      `gstack-dispatch answer ${id} reject "<why>" --round 1`,
    ];
    // logs: the agent's planning, then the whole plan and how to answer it.
    const logs = await runCli(["logs", id]);
    expect(logs.code).toBe(0);
    expect(logs.stdout).toContain(
      `${id} waits for your answer to its plan (round 1) until ${(await readState(world.layout, id))?.awaiting?.expires_at}`,
    );
    expect(logs.stdout).toContain(`\n${plan}\n\nAnswer with one of:\n`);
    for (const command of commands) expect(logs.stdout).toMatch(new RegExp(`\\n  ${literally(command)} +# `));
    expect(logs.stdout).not.toContain("has not ended");
    // status <id>: the same, through the service API.
    const shown = await runCli(["status", id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout.split("\n")[0]).toMatch(
      new RegExp(`^${id} waits for your answer to its plan \\(round 1\\)`),
    );
    expect(shown.stdout).toContain(`\n${plan}\n`);
    for (const command of commands) expect(shown.stdout).toContain(`  ${command}`);
    // status: the list points to it.
    const listed = await runCli(["status"]);
    expect(listed.stdout).toContain(`gstack-dispatch status ${id} shows it and how to answer`);

    // The approve line, pasted as it is (its comment included), is taken.
    const line = shown.stdout.split("\n").find((candidate) => candidate.includes(" approve --round 1")) ?? "";
    const pasted = execFileSync(
      "bash",
      ["-c", `${line.trim().replace(/^gstack-dispatch /, "set -- ")}\nprintf '%s\\0' "$@"`],
      {
        encoding: "utf8",
      },
    )
      .split("\0")
      .filter(Boolean);
    const approved = await runCli(pasted);
    expect(approved.stdout).toBe(`${id}: approved plan 1; the agent carries it out in the same session\n`);
    const completion = await waitFor(() => completionOf(world.layout, id), 90_000);
    // One run: the approval was no retry.
    expect(completion).toMatchObject({ status: "completed", commits: 1, attempt: 1, retries: 0 });
    const done = await runCli(["status", id]);
    expect(done.stdout).toMatch(
      new RegExp(
        `^${id}: completed after \\d+ s with 1 commit\\(s\\)\\n  this run \\(attempt 1\\): [0-9a-f]{7}\\n$`,
      ),
    );
    const ended = await runCli(["logs", id]);
    expect(ended.stdout).toContain("attempt: 1\n");
    expect(ended.stdout).toContain("retries: 0\n");
    expect(ended.stdout).not.toMatch(/Ran \d+ times/);
    expect(ended.stdout).not.toContain("waits for your answer");
  });

  it("logs --follow shows the plan in full when the wait begins, once, goes on after the answer and stops at the report", async () => {
    model = await startScriptedModel({
      script: [
        scripted.text("## Plan\n1. Add followed.txt.\n2. Commit it."),
        scripted.write("followed.txt", "followed\n"),
        scripted.bash("git add followed.txt"),
        scripted.bash("git commit -m 'Add followed.txt'"),
        scripted.text("Done.\n\n## What shipped\n- followed.txt"),
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
    const id = "dispatch-cli-followed";
    await submitDispatch(world.layout, {
      id,
      dispatched_by: "wintermute",
      task: "Add followed.txt",
      project: "acme-widget",
      project_dir: world.repo,
      mode: "plan",
    });
    // Followed from before its agent has written anything.
    await waitFor(() => readState(world.layout, id));
    const child = spawn(
      process.execPath,
      [...dispatchCommand(), "logs", id, "--follow", "--root", world.root],
      {
        cwd: join(import.meta.dirname, "..", ".."),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
    try {
      await waitFor(
        () => (output.includes("(--follow goes on once it is answered)") ? true : undefined),
        90_000,
      );
      expect(output).toContain("\n## Plan\n1. Add followed.txt.\n2. Commit it.\n\nAnswer with one of:\n");
      expect((await runCli(["answer", id, "approve", "--round", "1"])).code).toBe(0);
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    expect(output.split("waits for your answer").length - 1).toBe(1);
    const after = output.slice(output.indexOf("(--follow goes on once it is answered)"));
    expect(after).toContain("▶ Bash: git commit -m 'Add followed.txt'");
    expect(after).toMatch(/\n---\ndispatch_id: dispatch-cli-followed\nstatus: completed\n/);
  });
});

/** `text` as a regular expression that matches it literally. */
function literally(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
