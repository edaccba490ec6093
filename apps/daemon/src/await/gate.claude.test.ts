import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseJson } from "@gstack/contracts";
import { apiRequest, reachDaemonApi, readState, submitDispatch } from "@gstack/daemon-client";
import { scripted } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { type ClaudeWorld, makeClaudeWorld } from "../claude-world";
import { writeGstackRun } from "../gstack-run/gstack-run-fixture";
import { auditOf, completionOf, dispatchCommand, waitFor } from "../test-support";

const REPORT =
  "Planned with /autoplan.\n\n## What shipped\n- A reviewed plan\n## Needs human judgment\n- None";

let world: ClaudeWorld;
let scratch: string;

beforeEach(async () => {
  world = await makeClaudeWorld();
  scratch = await mkdtemp(join(tmpdir(), "gstack-run-files-"));
});

afterEach(async () => {
  await world.cleanup();
  await rm(scratch, { recursive: true, force: true });
});

/** The Write steps that make a gstack run directory in `dir`, as gstack writes one. */
async function runDirectoryWrites(name: string, dir: string, fixture: Parameters<typeof writeGstackRun>[1]) {
  const local = join(scratch, name);
  await writeGstackRun(local, fixture);
  const files = (await readdir(local)).sort((a, b) =>
    a === "run.json" ? 1 : b === "run.json" ? -1 : a.localeCompare(b),
  );
  return Promise.all(
    files.map(async (file) => scripted.write(join(dir, file), await readFile(join(local, file), "utf8"))),
  );
}

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [...dispatchCommand(), ...args, "--root", world.root],
      { cwd: join(import.meta.dirname, "..", "..") },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

async function answer(body: Record<string, unknown>) {
  const api = await reachDaemonApi(world.layout);
  if (!api) throw new Error("the service API does not answer");
  return apiRequest(api, "POST", "/v1/answer", { body: JSON.stringify(body) });
}

describe("a gstack run that stops at its gate, with the real Claude Code CLI", {
  timeout: loadBudget(120_000),
}, () => {
  it("waits with its numbered gate, takes a checked reply, resumes the session with it and completes", async () => {
    const id = "dispatch-gate-reply";
    const worktree = join(world.root, "worktrees", "acme-widget", id);
    const runDir = join(worktree, ".gstack", "runs", "r1");
    const gated = await runDirectoryWrites("gated", runDir, {});
    const answered = await runDirectoryWrites("answered", runDir, {
      status: "complete",
      decisions: [],
      tasks: [],
    });
    await world.start({
      script: [
        ...gated,
        scripted.text(`${REPORT}\n\nGSTACK_RESULT: skill=autoplan status=gate_pending run=.gstack/runs/r1`),
        ...answered,
        scripted.text(`${REPORT}\n\nGSTACK_RESULT: skill=autoplan status=complete run=.gstack/runs/r1`),
      ],
    });
    await submitDispatch(world.layout, {
      id,
      dispatched_by: "wintermute",
      task: "Plan the search fix with /autoplan",
      project: "acme-widget",
      project_dir: world.repo,
    });
    const waiting = await waitFor(async () => {
      const state = await readState(world.layout, id);
      return state?.status === "awaiting" ? state : undefined;
    }, 90_000);
    expect(waiting.awaiting).toMatchObject({ kind: "gate", round: 1, gate: { run: "r1", gate_rev: 1 } });
    const report = await readFile(join(world.layout.dispatch.sessionDir(id), "awaiting.md"), "utf8");
    expect(report).toContain("1. d3: Drop the session cache. Options: a) a; b) b. No recommendation.");
    expect(report).toContain("2. p1: Approve the plan.");
    expect(report).toContain(`gstack-dispatch answer ${id} all | d3b … | all except d3b`);
    // In a terminal, logs and status show the numbered decisions and the exact replies the gate takes.
    const gateLines = [
      "1. d3: Drop the session cache. Options: a) a; b) b. No recommendation.",
      "2. p1: Approve the plan. Options: a) a; b) b; c) c; d) d; e) e. Recommended: a.",
    ];
    const replies = [
      `gstack-dispatch answer ${id} d3a p1a --round 1`,
      `gstack-dispatch answer ${id} all except d3a --round 1`,
      `gstack-dispatch answer ${id} reject "<why>" --round 1`,
    ];
    for (const command of [
      ["logs", id],
      ["status", id],
    ]) {
      const shown = await runCli(command);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toContain(`${id} waits for your answer to its gstack gate (round 1) until`);
      for (const line of [...gateLines, ...replies]) expect(shown.stdout).toContain(line);
      expect(shown.stdout).toContain("# one option for each decision (d3: a/b, p1: a/b/c/d/e)");
      expect(shown.stdout).toContain("# the recommendations, but d3 takes a");
      // No decision lacks a letter: a bare `all` would be refused, so it is not offered.
      expect(shown.stdout).not.toContain(`answer ${id} all --round`);
    }
    // The notice for the session carries the gate's decisions, numbered as the report numbers them.
    const noticePath = world.layout.dispatch.awaitingJson(id);
    // Written just after the state that says it waits: waited for.
    const notice = await waitFor(async () => {
      const text = await readFile(noticePath, "utf8").catch(() => undefined);
      return text === undefined ? undefined : parseJson("awaiting-notice", text, { source: noticePath });
    }, 30_000);
    expect(notice).toMatchObject({ kind: "gate", round: 1, status: "awaiting" });
    expect(notice.items?.map((item) => item.label)).toEqual(["d3", "p1"]);
    expect(notice.items?.[0]).toMatchObject({
      title: "Drop the session cache",
      options: ["a", "b"],
      recommended: null,
    });
    expect(await completionOf(world.layout, id)).toBeUndefined();

    // Checked before anything is written: bare yes, a token naming nothing, all without a
    // recommendation for d3, an approval meant for a plan, and a stale gate revision.
    for (const [body, rule, words] of [
      [{ answer: "reply", text: "yes" }, "unparseable", 'a bare "yes"'],
      [{ answer: "reply", text: "d9a p1a" }, "unparseable", '"d9a" names no pending decision'],
      [{ answer: "reply", text: "all" }, "unparseable", "d3 has no recommendation"],
      [{ answer: "approve" }, "unparseable", "waits at a gstack gate"],
      [{ answer: "reply", text: "all except d3b", round: 2 }, "stale", "now waits on round 1"],
    ] as const) {
      const refused = await answer({ dispatch_id: id, ...body });
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ error: "answer_refused", rule });
      expect(String((refused.body as { message: string }).message)).toContain(words);
    }
    expect(await readState(world.layout, id)).toEqual(waiting);

    const accepted = await answer({ dispatch_id: id, answer: "reply", text: "all except d3b", round: 1 });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ answer: "reply", round: 1, status: "queued" });
    const completion = await waitFor(() => completionOf(world.layout, id), 90_000);
    expect(completion).toMatchObject({
      status: "completed",
      gstack_run: { status: "complete", check: "valid", run: "r1" },
      // The reply continues the same run: a second round, not a retry.
      attempt: 1,
      retries: 0,
    });
    // The same agent session went on, and was told the reply and the gate revision.
    const resumed = world.model
      ?.agentRequests()
      .find((request) => JSON.stringify(request.body).includes("answered the gstack gate"));
    expect(JSON.stringify(resumed?.body)).toContain("all except d3b");
    expect(JSON.stringify(resumed?.body)).toContain("--gate-rev 1");
    const stream = await readFile(join(world.layout.dispatch.sessionDir(id), "stream-2.jsonl"), "utf8");
    const init = JSON.parse(stream.split("\n").find((line) => line.includes('"init"')) ?? "{}");
    expect(init.session_id).toBe(waiting.awaiting?.session_id);
    const audit = await auditOf(world.layout);
    expect(audit.filter((event) => event.event === "answered")).toEqual([
      expect.objectContaining({ detail: { answer: "reply", round: 1 } }),
    ]);
  });
});
