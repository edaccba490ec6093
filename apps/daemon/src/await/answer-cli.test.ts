import { execFile, execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { Daemon } from "../daemon";
import { readState } from "../session-state";
import { submitDispatch } from "../submit";
import { completionOf, makeWorld, type TestWorld, waitFor } from "../test-support";

const cli = join(import.meta.dirname, "..", "cli.ts");
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
      ["--import", "tsx", cli, ...args, "--root", world.root],
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
});
