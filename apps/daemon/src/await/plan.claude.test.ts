import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Daemon } from "../daemon";
import { readState } from "../session-state";
import { readStatus } from "../status";
import { submitDispatch } from "../submit";
import { auditOf, completionOf, makeWorld, type TestWorld, waitFor } from "../test-support";

/** The real Claude Code CLI installed as this package's devDependency. */
const claude = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "claude");

const PLAN = "## Plan\n1. Add plan.txt with one line.\n2. Commit it.";

let world: TestWorld;
let model: ScriptedModel | undefined;
let daemon: Daemon | undefined;
let home: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-C", cwd, ...args], { encoding: "utf8" }).trim();

beforeEach(async () => {
  world = await makeWorld();
  git(world.repo, "config", "user.name", "Scripted Agent");
  git(world.repo, "config", "user.email", "agent@example.invalid");
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

async function start(
  options: Parameters<typeof startScriptedModel>[0],
  settings: Record<string, unknown> = {},
) {
  model ??= await startScriptedModel(options);
  daemon = new Daemon({
    openclawWorkspace: false,
    root: world.root,
    claudeBinary: claude,
    agentEnv: { ...model.claudeEnv(home), CLAUDE_CODE_MAX_RETRIES: "0" },
    retryDelayMs: { rateLimit: 100, other: 100 },
    settings: { trusted_repos: [world.base], ...settings },
  });
  await daemon.start();
}

function dispatch(id: string, extra: Record<string, unknown> = {}) {
  return {
    id,
    dispatched_by: "wintermute",
    task: "Add plan.txt and commit it",
    project: "acme-widget",
    project_dir: world.repo,
    ...extra,
  };
}

const awaitingOf = async (id: string) => {
  const state = await readState(world.layout, id);
  return state?.status === "awaiting" ? state : undefined;
};

describe("a dispatch that plans first, with the real Claude Code CLI", { timeout: 120_000 }, () => {
  it("plans read-only in its worktree, then waits for an answer holding no slot", async () => {
    // The agent tries to write while planning: plan mode must refuse it.
    await start({ script: [scripted.write("plan.txt", "too early\n"), scripted.text(PLAN)] });
    await submitDispatch(world.layout, dispatch("dispatch-plan-wait", { mode: "plan" }));
    const state = await waitFor(() => awaitingOf("dispatch-plan-wait"), 90_000);
    expect(state.awaiting).toMatchObject({ kind: "plan", round: 1 });
    expect(state.awaiting?.summary).toContain("Add plan.txt with one line");
    expect(state.awaiting?.session_id).toMatch(/[0-9a-f-]{8,}/);
    // The run was Claude Code's plan mode, in the dispatch's own worktree, and changed nothing.
    const stream = await readFile(
      join(world.layout.dispatch.sessionDir("dispatch-plan-wait"), "stream-1.jsonl"),
      "utf8",
    );
    const init = JSON.parse(stream.split("\n").find((line) => line.includes('"init"')) ?? "{}");
    expect(init.permissionMode).toBe("plan");
    const worktree = state.worktree?.path ?? "";
    expect(init.cwd).toBe(worktree);
    expect(git(worktree, "status", "--porcelain")).toBe("");
    expect(git(worktree, "rev-list", "--count", "HEAD")).toBe(git(world.repo, "rev-list", "--count", "HEAD"));
    // Not finished; its slot is free; status, list-sessions and the report show the wait.
    expect(await completionOf(world.layout, "dispatch-plan-wait")).toBeUndefined();
    const status = await readStatus(world.layout);
    expect(status.sessions.active).toBe(0);
    expect(status.sessions.awaiting).toEqual([
      expect.objectContaining({
        id: "dispatch-plan-wait",
        kind: "plan",
        expires_at: state.awaiting?.expires_at,
      }),
    ]);
    expect(daemon?.snapshot().running).toEqual([]);
    const report = await readFile(
      join(world.layout.dispatch.sessionDir("dispatch-plan-wait"), "awaiting.md"),
      "utf8",
    );
    expect(report).toContain("Add plan.txt with one line");
    expect(report).toContain("gstack-dispatch answer dispatch-plan-wait approve");
    const events = (await auditOf(world.layout)).map((event) => event.event);
    expect(events).toContain("awaiting");
  });

  it("plans first by the repository policy, and an unanswered wait ends cancelled with a clear report", async () => {
    await start(
      { script: [scripted.text(PLAN)] },
      { plan_first_repos: [world.repo], awaiting_expiry_hours: 0.0005 },
    );
    await submitDispatch(world.layout, dispatch("dispatch-plan-expire"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-plan-expire"), 90_000);
    expect(completion).toMatchObject({ status: "cancelled", commits: 0 });
    expect(String(completion.error)).toMatch(/no answer to its plan \(round 1\)/);
    const audit = await auditOf(world.layout);
    expect(audit.filter((event) => event.event === "awaiting")).toHaveLength(1);
    expect(audit.find((event) => event.event === "expired")?.reason).toMatch(/no answer/);
  });
});
