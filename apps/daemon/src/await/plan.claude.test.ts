import { execFileSync } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { parseJson } from "@gstack/contracts";
import { apiRequest, reachDaemonApi, readState, readStatus, submitDispatch } from "@gstack/daemon-client";
import { scripted } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { type ClaudeWorld, makeClaudeWorld } from "../claude-world";
import { auditOf, completionOf, waitFor } from "../test-support";

const PLAN = "## Plan\n1. Add plan.txt with one line.\n2. Commit it.";

let world: ClaudeWorld;

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-C", cwd, ...args], { encoding: "utf8" }).trim();

beforeEach(async () => {
  world = await makeClaudeWorld();
});

afterEach(() => world.cleanup());

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

const REPORT =
  "Done.\n\n## What shipped\n- plan.txt\n## Decisions made\n- none\n## Learnings logged\n- none\n## Needs human judgment\n- None";

const EXECUTE = [
  scripted.write("plan.txt", "planned\n"),
  scripted.bash("git add plan.txt"),
  scripted.bash("git commit -m 'Add plan.txt'"),
  scripted.text(REPORT),
];

/** Sends an answer through the running daemon's service API (its Unix socket). */
async function answer(body: Record<string, unknown>) {
  const api = await reachDaemonApi(world.layout);
  if (!api) throw new Error("the service API does not answer");
  return apiRequest(api, "POST", "/v1/answer", { body: JSON.stringify(body) });
}

async function initOf(id: string, attempt: number) {
  const stream = await readFile(
    join(world.layout.dispatch.sessionDir(id), `stream-${attempt}.jsonl`),
    "utf8",
  );
  return JSON.parse(stream.split("\n").find((line) => line.includes('"init"')) ?? "{}");
}

/**
 * The waiting notice the daemon wrote for a dispatch's round, checked against its schema; waited
 * for, since the daemon writes it just after the state that says the dispatch waits.
 */
async function noticeOf(id: string, round = 1) {
  const path = world.layout.dispatch.awaitingJson(id);
  return waitFor(async () => {
    const text = await readFile(path, "utf8").catch(() => undefined);
    const notice = text === undefined ? undefined : parseJson("awaiting-notice", text, { source: path });
    return notice?.round === round ? notice : undefined;
  }, 30_000);
}

const awaitingOf = async (id: string) => {
  const state = await readState(world.layout, id);
  return state?.status === "awaiting" ? state : undefined;
};

describe("a dispatch that plans first, with the real Claude Code CLI", {
  timeout: loadBudget(120_000),
}, () => {
  it("plans read-only in its worktree, then waits for an answer holding no slot", async () => {
    // The agent tries to write while planning: plan mode must refuse it.
    await world.start({ script: [scripted.write("plan.txt", "too early\n"), scripted.text(PLAN)] });
    await submitDispatch(
      world.layout,
      dispatch("dispatch-plan-wait", {
        mode: "plan",
        reply_to: { runtime: "openclaw", session_key: "agent:main:telegram:42" },
      }),
    );
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
    expect(world.daemon?.snapshot().running).toEqual([]);
    const report = await readFile(
      join(world.layout.dispatch.sessionDir("dispatch-plan-wait"), "awaiting.md"),
      "utf8",
    );
    expect(report).toContain("Add plan.txt with one line");
    expect(report).toContain("gstack-dispatch answer dispatch-plan-wait approve");
    const events = (await auditOf(world.layout)).map((event) => event.event);
    expect(events).toContain("awaiting");
    // The waiting notice for the session that asked, written once the state says it waits.
    const notice = await noticeOf("dispatch-plan-wait");
    expect(notice).toMatchObject({
      dispatch_id: "dispatch-plan-wait",
      status: "awaiting",
      kind: "plan",
      round: 1,
      project: "acme-widget",
      expires_at: state.awaiting?.expires_at,
      reply_to: { runtime: "openclaw", session_key: "agent:main:telegram:42" },
    });
    expect(notice.summary).toContain("Add plan.txt with one line");
    expect(notice.how_to_answer).toContain("gstack-dispatch answer dispatch-plan-wait approve");
  });

  it("writes the waiting notice again at start when a stopped daemon left none", async () => {
    await world.start({ script: [scripted.text(PLAN)] });
    await submitDispatch(world.layout, dispatch("dispatch-plan-renotice", { mode: "plan" }));
    await waitFor(() => awaitingOf("dispatch-plan-renotice"), 90_000);
    const first = await noticeOf("dispatch-plan-renotice");
    await world.stopDaemon();
    await rm(world.layout.dispatch.awaitingJson("dispatch-plan-renotice"));
    // The same model: the daemon starts again and finds the dispatch still waiting.
    await world.start();
    expect(await noticeOf("dispatch-plan-renotice")).toEqual(first);
  });

  it("plans first by the repository policy, and an unanswered wait ends cancelled with a clear report", async () => {
    await world.start(
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

  it("plan, approve, execute: the same agent session carries the plan out and commits on the worktree branch", async () => {
    await world.start({ script: [scripted.text(PLAN), ...EXECUTE] });
    await submitDispatch(world.layout, dispatch("dispatch-plan-go", { mode: "plan" }));
    const waiting = await waitFor(() => awaitingOf("dispatch-plan-go"), 90_000);
    const accepted = await answer({ dispatch_id: "dispatch-plan-go", answer: "approve", round: 1 });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ answer: "approve", round: 1, status: "queued" });
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-plan-go"), 90_000);
    expect(completion).toMatchObject({ status: "completed", commits: 1, branch: "gstack/dispatch-plan-go" });
    expect(git(world.repo, "diff", "--name-only", "main", "gstack/dispatch-plan-go")).toBe("plan.txt");
    // Resumed, not started afresh: the same session, now allowed to edit.
    const planned = await initOf("dispatch-plan-go", 1);
    const executed = await initOf("dispatch-plan-go", 2);
    expect(planned.permissionMode).toBe("plan");
    expect(executed.permissionMode).toBe("acceptEdits");
    expect(executed.session_id).toBe(waiting.awaiting?.session_id);
    expect(executed.cwd).toBe(waiting.worktree?.path);
    const resumed = world.model
      ?.agentRequests()
      .find((request) => JSON.stringify(request.body).includes("approved your plan"));
    expect(JSON.stringify(resumed?.body)).toContain("Add plan.txt with one line");
    // Answering again is refused: the dispatch no longer waits.
    const again = await answer({ dispatch_id: "dispatch-plan-go", answer: "approve" });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ error: "answer_refused", rule: "finished" });
    const answered = (await auditOf(world.layout)).filter((event) => event.event === "answered");
    expect(answered).toHaveLength(1);
    // One run in two rounds: the approval is neither a retry nor a second attempt.
    expect(completion).toMatchObject({ attempt: 1, retries: 0 });
    expect(await readState(world.layout, "dispatch-plan-go")).toMatchObject({
      attempt: 1,
      retries: 0,
      rounds: 1,
    });
    const report = await readFile(world.layout.dispatch.completedReport("dispatch-plan-go"), "utf8");
    expect(report).not.toMatch(/Ran \d+ times/);
    const audit = await auditOf(world.layout);
    expect(audit.filter((event) => event.event === "spawned").map((event) => event.detail)).toEqual([
      { attempt: 1, agent: "claude" },
      { attempt: 1, rounds: 1, agent: "claude" },
    ]);
    expect(audit.find((event) => event.event === "completed")?.detail).toMatchObject({
      retries: 0,
      attempts: 1,
      rounds: 1,
    });
    expect(audit.some((event) => event.event === "retried")).toBe(false);
    // The snapshot shows the run's commits as this run's, with no earlier attempt.
    const api = await reachDaemonApi(world.layout);
    if (!api) throw new Error("the service API does not answer");
    const snapshot = await apiRequest(api, "GET", "/v1/status?dispatch_id=dispatch-plan-go");
    expect(snapshot.body).toMatchObject({
      status: "completed",
      attempt: 1,
      run: { attempt: 1, commit_shas: completion.commit_shas },
    });
    expect(snapshot.body).not.toHaveProperty("earlier_runs");
  });

  it("plan, revise, plan, approve; stale, unparseable and unknown answers change nothing", async () => {
    const REVISED = "## Plan\n1. Add plan.txt saying planned.\n2. Commit it with a clear message.";
    await world.start({ script: [scripted.text(PLAN), scripted.text(REVISED), ...EXECUTE] });
    await submitDispatch(world.layout, dispatch("dispatch-plan-revise", { mode: "plan" }));
    const first = await waitFor(() => awaitingOf("dispatch-plan-revise"), 90_000);
    // Refused before anything is written.
    const unknown = await answer({ dispatch_id: "dispatch-nobody", answer: "approve" });
    expect(unknown.status).toBe(404);
    const bare = await answer({ dispatch_id: "dispatch-plan-revise", answer: "revise" });
    expect(bare.status).toBe(409);
    expect(bare.body).toMatchObject({ rule: "unparseable" });
    expect(String((bare.body as { message: string }).message)).toContain("revise needs the change");
    const yes = await answer({ dispatch_id: "dispatch-plan-revise", answer: "yes" });
    expect(yes.status).toBe(400);
    expect(await readState(world.layout, "dispatch-plan-revise")).toEqual(first);
    const revised = await answer({
      dispatch_id: "dispatch-plan-revise",
      answer: "revise",
      text: "say what the commit message will be",
      round: 1,
    });
    expect(revised.body).toMatchObject({ answer: "revise", round: 1, status: "queued" });
    const second = await waitFor(async () => {
      const state = await awaitingOf("dispatch-plan-revise");
      return state?.awaiting?.round === 2 ? state : undefined;
    }, 90_000);
    expect(second.awaiting?.summary).toContain("clear message");
    // The notice now holds round 2, a new report for the session.
    const revisedNotice = await noticeOf("dispatch-plan-revise", 2);
    expect(revisedNotice).toMatchObject({ round: 2, status: "awaiting", kind: "plan" });
    expect(revisedNotice.summary).toContain("clear message");
    expect((await initOf("dispatch-plan-revise", 2)).permissionMode).toBe("plan");
    const feedback = world.model
      ?.agentRequests()
      .find((request) => JSON.stringify(request.body).includes("asks for changes"));
    expect(JSON.stringify(feedback?.body)).toContain("say what the commit message will be");
    // An answer to the first plan is stale now.
    const stale = await answer({ dispatch_id: "dispatch-plan-revise", answer: "approve", round: 1 });
    expect(stale.status).toBe(409);
    expect(stale.body).toMatchObject({ rule: "stale" });
    expect(String((stale.body as { message: string }).message)).toContain("round 2");
    expect(await readState(world.layout, "dispatch-plan-revise")).toEqual(second);
    expect((await answer({ dispatch_id: "dispatch-plan-revise", answer: "approve", round: 2 })).status).toBe(
      200,
    );
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-plan-revise"), 90_000);
    expect(completion).toMatchObject({ status: "completed", commits: 1 });
    expect((await initOf("dispatch-plan-revise", 3)).session_id).toBe(first.awaiting?.session_id);
    // Two plans and their execution: three rounds of one attempt.
    expect(completion).toMatchObject({ attempt: 1, retries: 0 });
    expect(await readState(world.layout, "dispatch-plan-revise")).toMatchObject({ attempt: 1, rounds: 2 });
    // Ended: its waiting notice goes (just after the completion is written).
    await waitFor(
      () =>
        readFile(world.layout.dispatch.awaitingJson("dispatch-plan-revise"), "utf8").then(
          () => undefined,
          (error: NodeJS.ErrnoException) => error.code === "ENOENT" || undefined,
        ),
      30_000,
    );
  });

  it("reject ends the dispatch cancelled with the reason", async () => {
    await world.start({ script: [scripted.text(PLAN)] });
    await submitDispatch(world.layout, dispatch("dispatch-plan-no", { mode: "plan" }));
    await waitFor(() => awaitingOf("dispatch-plan-no"), 90_000);
    const rejected = await answer({
      dispatch_id: "dispatch-plan-no",
      answer: "reject",
      text: "wrong repository",
    });
    expect(rejected.body).toMatchObject({ answer: "reject", status: "cancelled" });
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-plan-no"), 30_000);
    expect(completion).toMatchObject({ status: "cancelled", commits: 0 });
    expect(String(completion.error)).toContain("plan rejected: wrong repository");
  });
});
