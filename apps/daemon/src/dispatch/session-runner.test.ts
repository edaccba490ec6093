import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Dispatch, parseValue } from "@gstack/contracts";
import type { AgentRunResult, AgentStarter, StartAgentOptions } from "@gstack/daemon-client";
import { readState, type SessionState } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DaemonContext } from "../daemon-context";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  roomContext,
  type TestWorld,
  waitFor,
} from "../test-support";
import { SessionRunner } from "./session-runner";

const REPORT =
  "## What shipped\n- it\n## Decisions made\n- none\n## Learnings logged\n- none\n## Needs human judgment\n- Nothing";

interface ScriptedRun {
  options: StartAgentOptions;
  /** state.json as it was on disk when the agent was started. */
  stateAtStart: SessionState;
  end(result: Partial<AgentRunResult>): void;
  cancelledWith?: string;
  /** Set by a test: the agent's process has exited, its result not read yet. */
  exited?: boolean;
}

/**
 * Agents the test ends by hand, in process: the runner's bookkeeping is what is tested here
 * (real agent processes are the daemon tests' business).
 */
class ScriptedAgents {
  readonly runs: ScriptedRun[] = [];
  constructor(private readonly world: TestWorld) {}
  readonly start: AgentStarter = (options) => {
    const id = String(options.env?.GSTACK_DISPATCH_ID);
    const statePath = join(this.world.layout.dispatch.sessionDir(id), "state.json");
    let end!: (result: Partial<AgentRunResult>) => void;
    const done = new Promise<AgentRunResult>((resolve) => {
      end = (result) =>
        resolve({
          exitCode: 0,
          signal: null,
          cancelled: false,
          timedOut: false,
          progress: { turns: 1, toolUses: 0 },
          ...result,
        });
    });
    const run: ScriptedRun = {
      options,
      stateAtStart: JSON.parse(readFileSync(statePath, "utf8")) as SessionState,
      end,
    };
    this.runs.push(run);
    return {
      pid: -1,
      done,
      cancel: (reason) => {
        run.cancelledWith = reason;
        end({ cancelled: true, exitCode: null, signal: "SIGTERM" });
      },
      ended: () => run.exited === true,
      progress: () => ({ turns: 0, toolUses: 0 }),
    };
  };
}

let world: TestWorld;
let context: DaemonContext;
let agents: ScriptedAgents;
let runner: SessionRunner;
let left: number;

beforeEach(async () => {
  world = await makeWorld();
  context = await roomContext(world, { max_concurrent: 1 });
  agents = new ScriptedAgents(world);
  left = 0;
  runner = new SessionRunner(context, {
    startAgent: agents.start,
    retryDelayMs: { rateLimit: 20, other: 20 },
    completion: () => ({
      layout: context.layout,
      delivery: context.delivery,
      audit: context.audit,
      log: context.log,
      shareLearnings: async () => {},
    }),
    onSessionLeft: () => {
      left += 1;
    },
  });
});

afterEach(async () => {
  await context.delivery.stop(0);
  await world.cleanup();
});

/** Claims a dispatch the way intake leaves it, then admits it. */
async function admit(id: string, extra: Record<string, unknown> = {}): Promise<number> {
  const document = dispatchFor(world, id, "say hi", extra);
  await writeFile(context.layout.dispatch.claimedFile(id), JSON.stringify(document));
  const dispatch: Dispatch = parseValue("dispatch", document);
  return runner.admit(dispatch, { projectDir: world.repo, firstSeen: new Date() });
}

describe("SessionRunner", () => {
  it("has the attempt on disk before the agent starts, and the pid-less run recorded after", async () => {
    expect(await admit("dispatch-a")).toBe(1);
    await waitFor(() => agents.runs[0]);
    expect(agents.runs[0]?.stateAtStart).toMatchObject({ status: "running", attempt: 1, id: "dispatch-a" });
    expect(agents.runs[0]?.options.env).toMatchObject({
      GSTACK_DISPATCH_ID: "dispatch-a",
      GSTACK_HOME: world.root,
      GSTACK_STATE_ROOT: world.root,
      GSTACK_SESSION_KIND: "unattended",
      OPENCLAW_SESSION: "gstack-dispatch:dispatch-a",
    });
    expect(runner.snapshot()).toEqual({ running: ["dispatch-a"], queued: [] });
    agents.runs[0]?.end({ result: REPORT });
    expect(await waitFor(() => completionOf(world.layout, "dispatch-a"))).toMatchObject({
      status: "completed",
      retries: 0,
    });
    await waitFor(async () =>
      (await readState(world.layout, "dispatch-a"))?.status === "finished" ? true : undefined,
    );
    expect(runner.snapshot()).toEqual({ running: [], queued: [] });
  });

  it("keeps the agent's progress on disk while it runs", async () => {
    await admit("dispatch-progress");
    const run = await waitFor(() => agents.runs[0]);
    run.options.onProgress?.({ turns: 7, toolUses: 3, lastAction: "Bash: npm test" });
    await waitFor(async () =>
      (await readState(world.layout, "dispatch-progress"))?.progress?.turns === 7 ? true : undefined,
    );
    expect((await readState(world.layout, "dispatch-progress"))?.progress).toMatchObject({
      lastAction: "Bash: npm test",
    });
    run.end({ result: REPORT });
    await waitFor(() => completionOf(world.layout, "dispatch-progress"));
  });

  it("queues what finds no free slot, with its state written, and runs it when the slot frees", async () => {
    await admit("dispatch-first");
    expect(await admit("dispatch-second")).toBe(1);
    expect((await readState(world.layout, "dispatch-second"))?.status).toBe("queued");
    expect(JSON.parse(await readFile(world.layout.dispatch.queue, "utf8")).queue).toEqual([
      "dispatch-second",
    ]);
    (await waitFor(() => agents.runs[0]))?.end({ result: REPORT });
    const second = await waitFor(() => agents.runs[1]);
    expect(second.options.env?.GSTACK_DISPATCH_ID).toBe("dispatch-second");
    second.end({ result: REPORT });
    await waitFor(() => completionOf(world.layout, "dispatch-second"));
  });

  it("retries a retryable failure once as the next attempt, and ends failed after a second", async () => {
    await admit("dispatch-flaky");
    const rateLimited = {
      exitCode: 1,
      failure: { kind: "rate_limit" as const, retryable: true, message: "429", retryWithoutLearnings: false },
    };
    (await waitFor(() => agents.runs[0])).end(rateLimited);
    const second = await waitFor(() => agents.runs[1]);
    expect(second.stateAtStart).toMatchObject({ status: "retrying", attempt: 2, retries: 1 });
    expect(second.options.prompt).toContain("This is attempt 2");
    second.end(rateLimited);
    expect(await waitFor(() => completionOf(world.layout, "dispatch-flaky"))).toMatchObject({
      status: "failed",
      error_kind: "rate_limit",
      retries: 1,
    });
    expect(agents.runs).toHaveLength(2);
    expect((await auditOf(world.layout)).filter((event) => event.event === "retried")).toHaveLength(1);
  });

  it("cancels: a running agent is signalled, a queued dispatch finished at once", async () => {
    await admit("dispatch-running");
    await admit("dispatch-waiting");
    const running = await waitFor(() => agents.runs[0]);
    const waiting = runner.get("dispatch-waiting");
    expect(waiting && (await runner.cancel(waiting, "not needed"))).toEqual({
      outcome: "cancelled",
      status: "cancelled",
    });
    expect(await completionOf(world.layout, "dispatch-waiting")).toMatchObject({ status: "cancelled" });
    const session = runner.get("dispatch-running");
    expect(session && (await runner.cancel(session, "stop it"))).toEqual({ outcome: "cancelling" });
    expect(running.cancelledWith).toBe("stop it");
    expect(await waitFor(() => completionOf(world.layout, "dispatch-running"))).toMatchObject({
      status: "cancelled",
    });
    expect(agents.runs).toHaveLength(1);
  });

  it("starts no agent when a cancel comes during the launch's last checks", async () => {
    // The trust check right before the spawn is where the cancel lands: it finds no agent yet.
    let checks = 0;
    let answer: Promise<unknown> | undefined;
    context.currentTrustedRepos = async () => {
      checks += 1;
      const session = runner.get("dispatch-cancel-at-spawn");
      if (checks === 2 && session) answer = runner.cancel(session, "not now");
      await answer;
      return context.settings.trusted_repos;
    };
    await admit("dispatch-cancel-at-spawn");
    expect(await waitFor(() => completionOf(world.layout, "dispatch-cancel-at-spawn"))).toMatchObject({
      status: "cancelled",
    });
    expect(checks).toBe(2);
    expect(await answer).toEqual({ outcome: "cancelling" });
    expect(agents.runs).toHaveLength(0);
  });

  it("answers a cancel that comes after the agent exited with how the run ended, and changes nothing", async () => {
    await admit("dispatch-late-cancel");
    const run = await waitFor(() => agents.runs[0]);
    run.exited = true;
    const session = runner.get("dispatch-late-cancel");
    const answer = session ? runner.cancel(session, "too late") : undefined;
    run.end({});
    expect(await answer).toEqual({ outcome: "finished", status: "completed" });
    expect(run.cancelledWith).toBeUndefined();
    expect(await completionOf(world.layout, "dispatch-late-cancel")).toMatchObject({ status: "completed" });
  });

  it("stops the retry when a cancel comes after a run that failed and will be retried", async () => {
    await admit("dispatch-cancel-retry");
    const run = await waitFor(() => agents.runs[0]);
    run.exited = true;
    const session = runner.get("dispatch-cancel-retry");
    const answer = session ? runner.cancel(session, "no retry please") : undefined;
    run.end({
      exitCode: 1,
      failure: { kind: "rate_limit", retryable: true, retryWithoutLearnings: false, message: "429" },
    });
    expect(await answer).toEqual({ outcome: "cancelled", status: "cancelled" });
    expect(await completionOf(world.layout, "dispatch-cancel-retry")).toMatchObject({ status: "cancelled" });
    // No retry is left scheduled to start it again (rather than a pause that might end first).
    expect(session?.retryTimer).toBeUndefined();
    expect(runner.get("dispatch-cancel-retry")).toBeUndefined();
    expect(runner.snapshot()).toEqual({ running: [], queued: [] });
    expect(agents.runs).toHaveLength(1);
  });

  it("finishes as cancelled a dispatch that expired while it waited, without starting it", async () => {
    await admit("dispatch-busy");
    await admit("dispatch-stale", {
      created_at: new Date(Date.now() - 59_000).toISOString(),
      ttl_seconds: 60,
    });
    await new Promise((done) => setTimeout(done, 1100));
    (await waitFor(() => agents.runs[0])).end({ result: REPORT });
    expect(await waitFor(() => completionOf(world.layout, "dispatch-stale"))).toMatchObject({
      status: "cancelled",
      error: expect.stringMatching(/^expired at .* before it could start$/),
    });
    expect(agents.runs).toHaveLength(1);
  });

  it("at a stop, queues running sessions again, first in line, for the next start", async () => {
    await admit("dispatch-interrupted");
    await admit("dispatch-behind");
    await waitFor(() => agents.runs[0]);
    context.stopping = true;
    await runner.holdRetries();
    await runner.interruptRunning();
    expect(agents.runs[0]?.cancelledWith).toBe("daemon stopping");
    expect((await readState(world.layout, "dispatch-interrupted"))?.status).toBe("queued");
    await runner.queue.save();
    expect(JSON.parse(await readFile(world.layout.dispatch.queue, "utf8")).queue).toEqual([
      "dispatch-interrupted",
      "dispatch-behind",
    ]);
    expect(await completionOf(world.layout, "dispatch-interrupted")).toBeUndefined();
    expect(left).toBe(1);
    expect(agents.runs).toHaveLength(1);
  });
});
