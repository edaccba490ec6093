import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Dispatch, isoWeekOf, parseValue, processAlive, writeFileAtomic } from "@gstack/contracts";
import { readState, type SessionState, writeQueueFile, writeState } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DaemonContext } from "./daemon-context";
import {
  type CompletionStepContext,
  carryOutCompletion,
  planCompletion,
  planPath,
} from "./finish/completion";
import { recover } from "./recovery";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  roomContext,
  type TestWorld,
  waitFor,
} from "./test-support";

let world: TestWorld;
let context: DaemonContext;
let completion: CompletionStepContext;
const children: ChildProcess[] = [];

beforeEach(async () => {
  world = await makeWorld();
  context = await roomContext(world);
  completion = {
    layout: context.layout,
    delivery: context.delivery,
    audit: context.audit,
    log: context.log,
    shareLearnings: async () => {},
  };
});

afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await context.delivery.stop(0);
  await world.cleanup();
});

/** A session as an earlier daemon left it: its claimed file and its state.json. */
async function leftBehind(
  id: string,
  fields: Partial<SessionState>,
): Promise<{ state: SessionState; dispatch: Dispatch }> {
  const document = dispatchFor(world, id, "say hi");
  const claimed = context.layout.dispatch.claimedFile(id);
  await writeFile(claimed, JSON.stringify(document));
  const state: SessionState = {
    id,
    project: "acme-widget",
    project_dir: world.repo,
    agent: "codex",
    status: "queued",
    claimed_file: claimed,
    first_seen: "2026-11-20T10:00:00.000Z",
    queued_at: "2026-11-20T10:00:00.000Z",
    attempt: 1,
    retries: 0,
    include_learnings: true,
    updated_at: "2026-11-20T10:00:00.000Z",
    ...fields,
  };
  await writeState(context.layout, state);
  return { state, dispatch: parseValue("dispatch", document) };
}

/** True while a process runs (a zombie, which can do nothing more, does not count). */
function runningProcess(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !["Z", "X"].includes(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] ?? "");
  } catch {
    return false;
  }
}

/** Runs recovery and records what it hands on, with no runner or intake behind it. */
async function recoverRecording() {
  const adopted: SessionState[] = [];
  const taken: Array<{ name: string; settled: boolean }> = [];
  await recover({
    context,
    completion,
    adopt: (state) => adopted.push(state),
    adoptWaiting: (state) => adopted.push(state),
    adopted: (id) => adopted.some((state) => state.id === id),
    takeClaimed: async (_path, name, _firstSeen, settled) => {
      taken.push({ name, settled });
    },
    saveQueue: async () => {},
  });
  return { adopted, taken };
}

describe("recovery of a state folder", () => {
  it("queues unfinished dispatches again: interrupted runs first (as the next attempt), then the saved order", async () => {
    await leftBehind("dispatch-queued-late", { queued_at: "2026-11-20T10:00:03.000Z" });
    await leftBehind("dispatch-queued-early", { queued_at: "2026-11-20T10:00:01.000Z" });
    await leftBehind("dispatch-not-in-order", { queued_at: "2026-11-20T10:00:00.000Z" });
    await leftBehind("dispatch-was-running", {
      status: "running",
      attempt: 1,
      started_at: "2026-11-20T10:00:02.000Z",
      queued_at: "2026-11-20T10:00:02.000Z",
    });
    await leftBehind("dispatch-done", { status: "finished", outcome: "completed" });
    await writeFile(
      context.layout.dispatch.completedJson("dispatch-done"),
      JSON.stringify({ dispatch_id: "dispatch-done", status: "completed", duration: 1 }),
    );
    // The saved order puts the later one first; ids it does not name go last.
    await writeQueueFile(context.layout, ["dispatch-queued-late", "dispatch-queued-early"]);
    const { adopted, taken } = await recoverRecording();
    expect(adopted.map((state) => state.id)).toEqual([
      "dispatch-was-running",
      "dispatch-queued-late",
      "dispatch-queued-early",
      "dispatch-not-in-order",
    ]);
    expect(taken).toEqual([]);
    expect(await readState(context.layout, "dispatch-was-running")).toMatchObject({
      status: "queued",
      attempt: 2,
      restarts: 1,
    });
    expect(await readState(context.layout, "dispatch-queued-late")).toMatchObject({
      status: "queued",
      attempt: 1,
    });
    const recovered = (await auditOf(context.layout)).filter((event) => event.event === "recovered");
    expect(recovered.map((event) => [event.dispatch_id, (event.detail as { was: string }).was])).toEqual([
      ["dispatch-was-running", "running"],
      ["dispatch-queued-late", "queued"],
      ["dispatch-queued-early", "queued"],
      ["dispatch-not-in-order", "queued"],
    ]);
  });

  it("keeps what an interrupted run had reported spending, for the cap of the next attempt", async () => {
    await leftBehind("dispatch-was-spending", {
      status: "running",
      started_at: "2026-11-20T10:00:02.000Z",
      budget_usd: 2,
      spent_usd: 0.5,
      progress: { turns: 3, toolUses: 2, costUsd: 0.25 },
    });
    await recoverRecording();
    const state = await readState(context.layout, "dispatch-was-spending");
    expect(state).toMatchObject({ attempt: 2, budget_usd: 2, spent_usd: 0.75 });
    expect(state?.progress?.costUsd).toBeUndefined();
  });

  it("carries out finishing a crash interrupted, from its plan, instead of running again", async () => {
    const { state, dispatch } = await leftBehind("dispatch-finishing", {
      status: "running",
      started_at: "2026-11-20T10:00:00.000Z",
    });
    const plan = await planCompletion({
      layout: context.layout,
      state,
      dispatch,
      status: "completed",
      outcome: {
        result: {
          exitCode: 0,
          signal: null,
          cancelled: false,
          timedOut: false,
          progress: { turns: 2, toolUses: 1 },
        },
      },
      finishedAt: new Date("2026-11-20T10:05:00.000Z"),
      sessionTimeoutSeconds: 3600,
    });
    await writeFileAtomic(planPath(context.layout, "dispatch-finishing"), JSON.stringify(plan));
    const { adopted } = await recoverRecording();
    expect(adopted).toEqual([]);
    expect(await completionOf(context.layout, "dispatch-finishing")).toMatchObject({
      status: "completed",
      turns: 2,
    });
    expect((await readState(context.layout, "dispatch-finishing"))?.status).toBe("finished");
    const files = await readdir(context.layout.dispatch.sessionDir("dispatch-finishing"));
    expect(files).not.toContain("finishing.json");
    expect(files).toContain("dispatch.json");
  });

  it("stops the agent a crashed daemon left running, by its recorded process group", async () => {
    const orphan = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
      detached: true,
      stdio: "ignore",
    });
    children.push(orphan);
    const pid = orphan.pid as number;
    await leftBehind("dispatch-orphaned", {
      status: "running",
      pid,
      pgid: pid,
      started_at: new Date().toISOString(),
    });
    const { adopted } = await recoverRecording();
    expect(adopted.map((state) => state.id)).toEqual(["dispatch-orphaned"]);
    await waitFor(() => (processAlive(pid) ? undefined : true), 5000);
    const killed = (await auditOf(context.layout)).find((event) => event.event === "orphan_killed");
    expect(killed).toMatchObject({ dispatch_id: "dispatch-orphaned", pid, detail: { pgid: pid } });
  });

  it("hands a dispatch back to run only once every process of its old agent's group is gone", async () => {
    // A leader and a helper in its group that both ignore SIGTERM, so only SIGKILL stops them.
    const orphan = spawn(
      process.execPath,
      [
        "-e",
        `process.on("SIGTERM", () => {});
const helper = require("node:child_process").spawn(process.execPath, ["-e", "process.on('SIGTERM', () => {}); setInterval(() => {}, 1000)"], { stdio: "ignore" });
console.log(helper.pid);
setInterval(() => {}, 1000);`,
      ],
      { detached: true, stdio: ["ignore", "pipe", "ignore"] },
    );
    children.push(orphan);
    const pid = orphan.pid as number;
    const helper = Number(
      await new Promise<string>((resolve) => orphan.stdout?.once("data", (chunk) => resolve(String(chunk)))),
    );
    await leftBehind("dispatch-stubborn", {
      status: "running",
      pid,
      pgid: pid,
      started_at: new Date().toISOString(),
    });
    const runningInGroup: number[][] = [];
    await recover({
      context,
      completion,
      adopt: () => runningInGroup.push([pid, helper].filter(runningProcess)),
      adoptWaiting: () => {},
      adopted: () => false,
      takeClaimed: async () => {},
      saveQueue: async () => {},
    });
    expect(runningInGroup).toEqual([[]]);
  });

  it("leaves alone a recorded pid that no longer leads the recorded group", async () => {
    // A live process of another group: as if the pid had been reused by another program.
    // It answers each line on stdin, so the test can ask whether it still runs.
    const stranger = spawn(
      process.execPath,
      ["-e", `process.stdin.on("data", () => process.stdout.write("here\\n"));`],
      { detached: true, stdio: ["pipe", "pipe", "ignore"] },
    );
    children.push(stranger);
    const pid = stranger.pid as number;
    const exited = new Promise<string>((resolve) => stranger.once("exit", () => resolve("exited")));
    const ask = () => {
      const answered = new Promise<string>((resolve) =>
        stranger.stdout?.once("data", () => resolve("answered")),
      );
      stranger.stdin?.write("?\n");
      return Promise.race([answered, exited]);
    };
    expect(await ask()).toBe("answered");
    await leftBehind("dispatch-reused", { status: "running", pid, pgid: pid + 100_000 });
    await recoverRecording();
    // A signal recovery sent is pending before this question, and a process handles pending
    // signals before it reads again: an answer proves none ended it, however busy the machine.
    expect(await ask()).toBe("answered");
    expect(runningProcess(pid)).toBe(true);
    expect((await auditOf(context.layout)).some((event) => event.event === "orphan_killed")).toBe(false);
  });

  it("hands claimed files with no session back to intake and drops an offer never accepted", async () => {
    const claimed = context.layout.dispatch.claimed;
    await writeFile(
      join(claimed, "dispatch-claimed-only.json"),
      JSON.stringify(dispatchFor(world, "dispatch-claimed-only", "x")),
    );
    await writeFile(
      join(claimed, ".claim-42-abcdef"),
      JSON.stringify(dispatchFor(world, "dispatch-mid-claim", "x")),
    );
    await writeFile(
      join(claimed, ".offer-42-abcdef"),
      JSON.stringify(dispatchFor(world, "dispatch-mid-offer", "x")),
    );
    await leftBehind("dispatch-has-state", {});
    const { taken } = await recoverRecording();
    expect(taken.sort((a, b) => a.name.localeCompare(b.name))).toEqual([
      { name: ".claim-42-abcdef", settled: false },
      { name: "dispatch-claimed-only.json", settled: true },
    ]);
    expect(await readdir(claimed)).not.toContain(".offer-42-abcdef");
    expect(await readFile(join(claimed, "dispatch-has-state.json"), "utf8")).toContain("dispatch-has-state");
  });
});

describe("recovery of a dispatch that waits for a person", () => {
  const waiting = (round: number): Partial<SessionState> => ({
    status: "awaiting",
    awaiting: {
      kind: "plan",
      since: "2026-11-20T10:00:00.000Z",
      expires_at: "2026-11-23T10:00:00.000Z",
      round,
      summary: "## Plan\n1. Add plan.txt.",
      how_to_answer: "gstack-dispatch answer dispatch-waits approve",
    },
  });
  const waits = async () =>
    (await auditOf(context.layout)).filter(
      (event) => event.event === "awaiting" && event.dispatch_id === "dispatch-waits",
    );

  it("writes the wait's audit event a kill cut off after the waiting state, once across restarts", async () => {
    await leftBehind("dispatch-waits", waiting(2));
    // Round 1's event and another dispatch's round 2 do not stand for this wait.
    await context.audit("awaiting", { dispatch_id: "dispatch-waits", detail: { kind: "plan", round: 1 } });
    await context.audit("awaiting", { dispatch_id: "dispatch-other", detail: { kind: "plan", round: 2 } });
    const { adopted } = await recoverRecording();
    expect(adopted.map((state) => state.id)).toEqual(["dispatch-waits"]);
    expect((await waits()).map((event) => (event.detail as { round: number }).round)).toEqual([1, 2]);
    await recoverRecording();
    await recoverRecording();
    expect(await waits()).toHaveLength(2);
  });

  it("writes the answered event of an answer a kill cut off after its acceptance, once across restarts", async () => {
    const left = waiting(2);
    if (!left.awaiting) throw new Error("no wait");
    left.awaiting.answer = { kind: "approve", accepted_at: "2026-11-20T11:00:00.000Z" };
    await leftBehind("dispatch-waits", left);
    // The wait's own event is there; round 1's answer does not stand for round 2's.
    await context.audit("awaiting", { dispatch_id: "dispatch-waits", detail: { kind: "plan", round: 2 } });
    await context.audit("answered", {
      dispatch_id: "dispatch-waits",
      detail: { answer: "revise", round: 1 },
    });
    const answers = async () =>
      (await auditOf(context.layout)).filter(
        (event) => event.event === "answered" && event.dispatch_id === "dispatch-waits",
      );
    await recoverRecording();
    expect((await answers()).map((event) => event.detail)).toEqual([
      { answer: "revise", round: 1 },
      { answer: "approve", round: 2, written: "at start-up" },
    ]);
    await recoverRecording();
    expect(await answers()).toHaveLength(2);
    expect(await waits()).toHaveLength(1);
  });

  it("writes nothing more for a wait whose event is in the audit log", async () => {
    await leftBehind("dispatch-waits", waiting(1));
    // A line that is not an event (naming the dispatch, as a hand edit might) is read past.
    await writeFile(context.layout.dispatch.audit, '{"dispatch_id":"dispatch-waits", torn\n');
    await context.audit("awaiting", { dispatch_id: "dispatch-waits", detail: { kind: "plan", round: 1 } });
    await recoverRecording();
    const lines = (await readFile(context.layout.dispatch.audit, "utf8")).split("\n");
    expect(lines.filter((line) => line.includes('"event":"awaiting"'))).toHaveLength(1);
    expect(lines[0]).toBe('{"dispatch_id":"dispatch-waits", torn');
  });
});

describe("repair of a session older code marked finished without a completion JSON", () => {
  const REPORT_TEXT =
    "## What shipped\n- it\n## Decisions made\n- none\n## Learnings logged\n- tool: The widget builds with make\n## Needs human judgment\n- Nothing";

  /** A finished run's plan, as the completion step decides it. */
  async function planFor(id: string) {
    const { state, dispatch } = await leftBehind(id, {
      status: "running",
      started_at: "2026-11-20T10:00:00.000Z",
    });
    const plan = await planCompletion({
      layout: context.layout,
      state,
      dispatch,
      status: "completed",
      outcome: {
        result: {
          exitCode: 0,
          signal: null,
          cancelled: false,
          timedOut: false,
          progress: { turns: 4, toolUses: 2 },
          result: REPORT_TEXT,
        },
      },
      finishedAt: new Date("2026-11-20T10:05:00.000Z"),
      sessionTimeoutSeconds: 3600,
    });
    return { state, dispatch, plan };
  }

  /** Marks a session finished the way older code did, before the completion JSON existed. */
  async function markFinished(state: SessionState) {
    state.status = "finished";
    state.outcome = "completed";
    state.updated_at = "2026-11-20T10:05:00.000Z";
    await writeState(context.layout, state);
  }

  async function linesWith(path: string, needle: string): Promise<number> {
    try {
      return (await readFile(path, "utf8")).split("\n").filter((line) => line.includes(needle)).length;
    } catch {
      return 0;
    }
  }

  async function expectExactlyOneCompletion(id: string) {
    expect(
      (await readdir(context.layout.dispatch.completed)).filter((name) => name === `${id}.json`),
    ).toHaveLength(1);
    const terminal = (await auditOf(context.layout)).filter(
      (event) =>
        event.dispatch_id === id &&
        ["completed", "failed", "cancelled", "timeout"].includes(String(event.event)),
    );
    expect(terminal).toHaveLength(1);
    expect((await readState(context.layout, id))?.status).toBe("finished");
    expect(await readdir(context.layout.dispatch.sessionDir(id))).not.toContain("finishing.json");
    // A second start finds nothing left to repair.
    const before = await readFile(context.layout.dispatch.completedJson(id), "utf8");
    const eventsBefore = (await auditOf(context.layout)).length;
    await recoverRecording();
    expect(await readFile(context.layout.dispatch.completedJson(id), "utf8")).toBe(before);
    expect((await auditOf(context.layout)).length).toBe(eventsBefore);
  }

  it("takes the completion from the report older code wrote first, without repeating what it did", async () => {
    const { state, dispatch, plan } = await planFor("dispatch-old-report");
    // Older code: report, learnings, activity, archive, state finished, terminal audit, and
    // then, had it not been stopped, the completion JSON.
    await carryOutCompletion(
      {
        ...completion,
        beforeStep: (step) => {
          if (step === "completion-json") throw new Error("stopped here");
        },
      },
      state,
      dispatch,
      plan,
      false,
    ).catch(() => undefined);
    await rm(planPath(context.layout, state.id));
    await markFinished(state);

    const enqueued: string[] = [];
    completion = {
      ...completion,
      delivery: {
        ...context.delivery,
        enqueue: async (delivery) => {
          enqueued.push(delivery.completion.dispatch_id);
        },
      },
    };
    const { adopted } = await recoverRecording();
    expect(adopted).toEqual([]);
    const repaired = await completionOf(context.layout, "dispatch-old-report");
    expect(repaired).toEqual(JSON.parse(JSON.stringify(plan.completion)));
    expect(repaired).toMatchObject({ status: "completed", turns: 4 });
    await expectExactlyOneCompletion("dispatch-old-report");
    const week = context.layout.activity.week(isoWeekOf(new Date("2026-11-20T10:05:00.000Z")));
    expect(await linesWith(week, '"dispatch_id":"dispatch-old-report"')).toBe(1);
    expect(
      await linesWith(context.layout.project("acme-widget").learnings, "dispatch:dispatch-old-report"),
    ).toBe(1);
    // Its delivery, never made by the older code, is handed over now (once; the second start
    // inside expectExactlyOneCompletion found nothing to repair).
    expect(enqueued).toEqual(["dispatch-old-report"]);
    const recovered = (await auditOf(context.layout)).find((event) => event.event === "recovered");
    expect(recovered?.detail).toMatchObject({ was: "finished", repaired_from: "report" });
  });

  it("carries out the plan when one was left, though the state says finished", async () => {
    const { state, plan } = await planFor("dispatch-old-plan");
    await writeFileAtomic(planPath(context.layout, state.id), JSON.stringify(plan));
    await markFinished(state);
    await recoverRecording();
    expect(await completionOf(context.layout, "dispatch-old-plan")).toMatchObject({
      status: "completed",
      turns: 4,
    });
    await expectExactlyOneCompletion("dispatch-old-plan");
  });

  it("ends one with neither plan nor report as failed, saying its result is lost", async () => {
    const { state } = await leftBehind("dispatch-old-bare", { started_at: "2026-11-20T10:00:00.000Z" });
    await markFinished(state);
    const { adopted } = await recoverRecording();
    expect(adopted).toEqual([]);
    const repaired = await completionOf(context.layout, "dispatch-old-bare");
    expect(repaired).toMatchObject({
      status: "failed",
      error_kind: "unknown",
      duration: 300,
      commits: 0,
      finished_at: "2026-11-20T10:05:00.000Z",
    });
    expect(String(repaired?.error)).toMatch(
      /^state damaged: the session was marked finished \(completed\) without a completion or a report/,
    );
    const report = await readFile(context.layout.dispatch.completedReport("dispatch-old-bare"), "utf8");
    expect(report).toContain("state damaged");
    await expectExactlyOneCompletion("dispatch-old-bare");
  });

  it("ends one whose dispatch file is gone as well, from what its state still knows", async () => {
    const { state } = await leftBehind("dispatch-old-lost", {});
    await markFinished(state);
    await rm(context.layout.dispatch.claimedFile("dispatch-old-lost"));
    await recoverRecording();
    expect(await completionOf(context.layout, "dispatch-old-lost")).toMatchObject({
      status: "failed",
      error_kind: "unknown",
      project: "acme-widget",
    });
    await expectExactlyOneCompletion("dispatch-old-lost");
  });

  it("finishes as failed an unfinished session whose dispatch cannot be read, instead of marking it finished bare", async () => {
    await leftBehind("dispatch-unreadable", { status: "running" });
    await writeFile(context.layout.dispatch.claimedFile("dispatch-unreadable"), "{ not a dispatch");
    const { adopted } = await recoverRecording();
    expect(adopted).toEqual([]);
    const completionJson = await completionOf(context.layout, "dispatch-unreadable");
    expect(completionJson).toMatchObject({ status: "failed", error_kind: "unknown" });
    expect(String(completionJson?.error)).toMatch(/^cannot recover: /);
    await expectExactlyOneCompletion("dispatch-unreadable");
  });
});
