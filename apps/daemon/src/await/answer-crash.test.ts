import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { apiRequest, reachDaemonApi, readState, submitDispatch, writeState } from "@gstack/daemon-client";
import {
  type RecordedRequest,
  type ScriptedModel,
  scripted,
  startScriptedModel,
} from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { auditOf, completionOf, dispatchCommand, makeWorld, type TestWorld, waitFor } from "../test-support";

const claude = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "claude");
const PLAN = "## Plan\n1. Add plan.txt.\n2. Commit it.";
const REPORT = "Done.\n\n## What shipped\n- plan.txt\n## Needs human judgment\n- None";

let world: TestWorld;
let model: ScriptedModel;
/** Set by a test: the first request of the plan's execution is held open, never answered. */
let holdFirstExecution = false;
let home: string;
const children: ChildProcess[] = [];

const isExecution = (request: RecordedRequest) => JSON.stringify(request.body).includes("approved your plan");
/**
 * The next step of carrying the plan out, from the request alone: after the prompt, write the
 * file; after the write, add it; after the add, commit; after the commit, report. A run killed
 * halfway and resumed starts again from its new prompt, and each step is safe to repeat (a
 * second commit finds nothing to commit).
 */
function executionStep(request: RecordedRequest) {
  const messages = (request.body?.messages ?? []) as { content?: unknown }[];
  if (!JSON.stringify(messages.at(-1)?.content ?? "").includes('"tool_result"')) {
    return scripted.write("plan.txt", "planned\n");
  }
  const previous = JSON.stringify(messages.at(-2)?.content ?? "");
  if (previous.includes("git commit")) return scripted.text(REPORT);
  if (previous.includes("git add")) return scripted.bash("git commit -m 'Add plan.txt'");
  return scripted.bash("git add plan.txt");
}

beforeEach(async () => {
  world = await makeWorld();
  home = await mkdtemp(join(tmpdir(), "gstack-claude-home-"));
  model = await startScriptedModel({
    // Chosen from the request alone, so a run killed halfway and resumed gets the right step.
    respond: (request) => {
      if (!isExecution(request)) return scripted.text(PLAN);
      if (holdFirstExecution) {
        holdFirstExecution = false;
        return scripted.hang();
      }
      return executionStep(request);
    },
  });
  await mkdir(world.root, { recursive: true });
  await writeFile(
    world.layout.config,
    [
      "dispatch:",
      `  trusted_repos: [${JSON.stringify(world.base)}]`,
      "  agents:",
      "    claude:",
      `      command: [${JSON.stringify(claude)}]`,
    ].join("\n"),
  );
  execFileSync("git", ["-C", world.repo, "config", "user.name", "Scripted Agent"]);
  execFileSync("git", ["-C", world.repo, "config", "user.email", "agent@example.invalid"]);
});

afterEach(async () => {
  holdFirstExecution = false;
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  await model.close();
  await rm(home, { recursive: true, force: true });
  await world.cleanup();
});

/** `gstack-dispatch run` in a process of its own, as the service manager starts it. */
async function startDaemon(): Promise<ChildProcess> {
  const child = spawn(process.execPath, [...dispatchCommand(), "run", "--root", world.root], {
    cwd: join(import.meta.dirname, "..", ".."),
    env: {
      ...process.env,
      ...model.claudeEnv(home),
      CLAUDE_CODE_MAX_RETRIES: "0",
      PATH: `${dirname(process.execPath)}:/usr/bin:/bin`,
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.push(child);
  await waitFor(async () => {
    const api = await reachDaemonApi(world.layout).catch(() => undefined);
    if (!api) return undefined;
    const health = await apiRequest(api, "GET", "/health").catch(() => undefined);
    return health?.status === 200 ? true : undefined;
  }, 30_000);
  return child;
}

async function killHard(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGKILL");
  await exited;
}

const awaitingOf = async (id: string) => {
  const state = await readState(world.layout, id);
  return state?.status === "awaiting" ? state : undefined;
};

const plans = () => model.agentRequests().filter((request) => !isExecution(request)).length;

describe("answers across kill -9 of the daemon", { timeout: loadBudget(180_000) }, () => {
  it("a wait survives kill -9, and an answer accepted just before another kill -9 takes effect once", async () => {
    const id = "dispatch-plan-crash";
    let daemon = await startDaemon();
    await submitDispatch(world.layout, {
      id,
      dispatched_by: "wintermute",
      task: "Add plan.txt and commit it",
      project: "acme-widget",
      project_dir: world.repo,
      mode: "plan",
    });
    const waiting = await waitFor(() => awaitingOf(id), 90_000);
    await killHard(daemon);

    // Restarted: still waiting on the same plan, which is not made again.
    daemon = await startDaemon();
    const api = await reachDaemonApi(world.layout);
    if (!api) throw new Error("no service API");
    const snapshot = await apiRequest(api, "GET", `/v1/status?dispatch_id=${id}`);
    expect(snapshot.body).toMatchObject({ status: "awaiting", terminal: false, awaiting: { round: 1 } });
    expect((await readState(world.layout, id))?.awaiting).toEqual(waiting.awaiting);

    const accepted = await apiRequest(api, "POST", "/v1/answer", {
      body: JSON.stringify({ dispatch_id: id, answer: "approve", round: 1 }),
    });
    expect(accepted.status).toBe(200);
    await killHard(daemon);

    daemon = await startDaemon();
    const completion = await waitFor(() => completionOf(world.layout, id), 90_000);
    expect(completion).toMatchObject({ status: "completed", commits: 1 });
    expect(
      execFileSync("git", ["-C", world.repo, "log", "--format=%s", `gstack/${id}`], { encoding: "utf8" }),
    ).toMatch(/^Add plan.txt\n/);
    const audit = await auditOf(world.layout);
    expect(audit.filter((event) => event.event === "answered")).toHaveLength(1);
    expect(audit.filter((event) => event.event === "awaiting")).toHaveLength(1);
    expect(plans()).toBe(1);
    await killHard(daemon);
  });

  it("an answer on disk whose effect a crash cut short is acted on at the next start, once", async () => {
    const id = "dispatch-plan-cut";
    let daemon = await startDaemon();
    await submitDispatch(world.layout, {
      id,
      dispatched_by: "wintermute",
      task: "Add plan.txt and commit it",
      project: "acme-widget",
      project_dir: world.repo,
      mode: "plan",
    });
    const waiting = await waitFor(() => awaitingOf(id), 90_000);
    await killHard(daemon);
    // What the accepting write leaves when the daemon dies before acting on it.
    if (!waiting.awaiting) throw new Error("no wait recorded");
    waiting.awaiting.answer = { kind: "approve", accepted_at: new Date().toISOString() };
    await writeState(world.layout, waiting);

    daemon = await startDaemon();
    const completion = await waitFor(() => completionOf(world.layout, id), 90_000);
    expect(completion).toMatchObject({ status: "completed", commits: 1 });
    expect(plans()).toBe(1);
    const api = await reachDaemonApi(world.layout);
    if (!api) throw new Error("no service API");
    const again = await apiRequest(api, "POST", "/v1/answer", {
      body: JSON.stringify({ dispatch_id: id, answer: "approve" }),
    });
    expect(again.body).toMatchObject({ error: "answer_refused", rule: "finished" });
    // The answer the crash kept from being audited is audited once, by the restart.
    const audit = await auditOf(world.layout);
    expect(audit.filter((event) => event.event === "answered" && event.dispatch_id === id)).toHaveLength(1);
    expect(audit.filter((event) => event.event === "awaiting" && event.dispatch_id === id)).toHaveLength(1);
    await killHard(daemon);
  });

  it("a kill -9 while the approved plan runs: the run started again is a retry, the approval is not", async () => {
    const id = "dispatch-plan-rerun";
    holdFirstExecution = true;
    let daemon = await startDaemon();
    await submitDispatch(world.layout, {
      id,
      dispatched_by: "wintermute",
      task: "Add plan.txt and commit it",
      project: "acme-widget",
      project_dir: world.repo,
      mode: "plan",
    });
    await waitFor(() => awaitingOf(id), 90_000);
    const api = await reachDaemonApi(world.layout);
    if (!api) throw new Error("no service API");
    const accepted = await apiRequest(api, "POST", "/v1/answer", {
      body: JSON.stringify({ dispatch_id: id, answer: "approve", round: 1 }),
    });
    expect(accepted.status).toBe(200);
    // The plan's execution has begun (its first model request is held open): the daemon dies.
    await waitFor(() => (model.hangingCount() > 0 ? true : undefined), 90_000);
    expect(await readState(world.layout, id)).toMatchObject({ status: "running", attempt: 1, rounds: 1 });
    await killHard(daemon);

    daemon = await startDaemon();
    const completion = await waitFor(() => completionOf(world.layout, id), 90_000);
    // The interrupted run counts: attempt 2, one retry; the approval before it never did.
    expect(completion).toMatchObject({ status: "completed", commits: 1, attempt: 2, retries: 1 });
    const report = await readFile(world.layout.dispatch.completedReport(id), "utf8");
    expect(report).toContain("Ran 2 times (1 after the daemon was interrupted).");
    // Each start has its own stream: the plan, the cut execution, and the one that finished.
    const streams = (await readdir(world.layout.dispatch.sessionDir(id))).filter((name) =>
      /^stream-\d+\.jsonl$/.test(name),
    );
    expect(streams.sort()).toEqual(["stream-1.jsonl", "stream-2.jsonl", "stream-3.jsonl"]);
    const spawned = (await auditOf(world.layout)).filter(
      (event) => event.event === "spawned" && event.dispatch_id === id,
    );
    expect(spawned.map((event) => event.detail)).toEqual([
      { attempt: 1, agent: "claude" },
      { attempt: 1, rounds: 1, agent: "claude" },
      { attempt: 2, rounds: 1, agent: "claude" },
    ]);
    expect(plans()).toBe(1);
    await killHard(daemon);
  });
});
