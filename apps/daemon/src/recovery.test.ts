import { type ChildProcess, spawn } from "node:child_process";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Dispatch, parseValue, processAlive, writeFileAtomic } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type CompletionStepContext, planCompletion, planPath } from "./completion";
import type { DaemonContext } from "./daemon-context";
import { recover } from "./recovery";
import { readState, type SessionState, writeQueueFile, writeState } from "./session-state";
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

/** Runs recovery and records what it hands on, with no runner or intake behind it. */
async function recoverRecording() {
  const adopted: SessionState[] = [];
  const taken: Array<{ name: string; settled: boolean }> = [];
  await recover({
    context,
    completion,
    adopt: (state) => adopted.push(state),
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

  it("leaves alone a recorded pid that no longer leads the recorded group", async () => {
    // A live process of another group: as if the pid had been reused by another program.
    const stranger = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], {
      detached: true,
      stdio: "ignore",
    });
    children.push(stranger);
    const pid = stranger.pid as number;
    await leftBehind("dispatch-reused", { status: "running", pid, pgid: pid + 100_000 });
    await recoverRecording();
    await new Promise((done) => setTimeout(done, 200));
    expect(processAlive(pid)).toBe(true);
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
