import { readFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import type { DaemonContext } from "./daemon-context";
import { Lifecycle, type LifecycleParts } from "./lifecycle";
import { auditOf, makeWorld, roomContext, type TestWorld } from "./test-support";

/** Sessions that end only when told to, standing in for the runner. */
class HeldSessions {
  active = 0;
  queued = 0;
  pumped = 0;
  held = 0;
  interrupted = 0;
  saved = 0;
  onInterrupt?: () => void;
  pump() {
    this.pumped += 1;
  }
  async holdRetries() {
    this.held += 1;
  }
  async interruptRunning() {
    this.interrupted += 1;
    this.active = 0;
    this.onInterrupt?.();
  }
  async saveQueue() {
    this.saved += 1;
  }
}

let world: TestWorld;
let context: DaemonContext & { lines: string[] };
let sessions: HeldSessions;
let steps: string[];
let lifecycle: Lifecycle;

/** A lifecycle over stand-ins; each gets a context of its own, as each daemon has. */
function makeLifecycle(
  overrides: Partial<LifecycleParts> = {},
  own: DaemonContext = { ...context, stopping: false },
): Lifecycle {
  const delivery = own.delivery;
  return new Lifecycle({
    context: own,
    settings: { trusted_repos: [world.base], agents: { codex: { command: [process.execPath, "{prompt}"] } } },
    makeDelivery: () => {
      steps.push("delivery");
      return delivery;
    },
    recover: async () => {
      steps.push("recover");
    },
    doors: {
      open: async () => {
        steps.push("open");
      },
      rescan: async () => {
        steps.push("rescan");
      },
      close: async () => {
        steps.push("close");
      },
    },
    sessions,
    ...overrides,
  });
}

beforeEach(async () => {
  world = await makeWorld();
  context = await roomContext(world);
  sessions = new HeldSessions();
  steps = [];
  lifecycle = makeLifecycle({}, context);
});

afterEach(async () => {
  await lifecycle.stop(0);
  await world.cleanup();
});

describe("Lifecycle", () => {
  it("starts in order (lock, environment, delivery, recovery, then the doors) and beats once", async () => {
    await lifecycle.start();
    expect(steps).toEqual(["delivery", "recover", "open"]);
    expect(sessions.pumped).toBe(1);
    expect(lifecycle.started).toBe(true);
    expect(context.environment.knownAgents).toContain("codex");
    const lock = await readFile(`${world.layout.dispatch.incoming}/.daemon.lock`, "utf8");
    expect(lock).toContain(String(process.pid));
    const heartbeat = JSON.parse(await readFile(world.layout.dispatch.heartbeat, "utf8"));
    expect(heartbeat).toMatchObject({
      pid: process.pid,
      active: 0,
      queued: 0,
      mode: "local-only",
      max_concurrent: 2,
    });
    expect((await auditOf(world.layout)).map((event) => event.event)).toEqual(["daemon_started"]);
  });

  it("releases the lock when recovery fails, so the next start can take it", async () => {
    const failing = makeLifecycle({
      recover: async () => {
        throw new Error("state folder unreadable");
      },
    });
    await expect(failing.start()).rejects.toThrow("state folder unreadable");
    await lifecycle.start();
    expect(lifecycle.started).toBe(true);
  });

  it("stops at once with nothing running: doors closed, queue saved, lock released", async () => {
    await lifecycle.start();
    await lifecycle.stop();
    expect(steps.slice(-1)).toEqual(["close"]);
    expect([sessions.held, sessions.interrupted, sessions.saved]).toEqual([1, 0, 1]);
    expect((await auditOf(world.layout)).map((event) => event.event)).toEqual([
      "daemon_started",
      "daemon_stopping",
      "daemon_stopped",
    ]);
    // The lock is free again.
    const next = makeLifecycle();
    await next.start();
    await next.stop(0);
  });

  /** Until the stop waits for its running sessions (its log says so). */
  const graceBegun = () =>
    vi.waitUntil(() => context.lines.some((line) => line.startsWith("grace: waiting")), {
      timeout: loadBudget(10_000),
      interval: 5,
    });

  it("gives running sessions their grace, and ends it once the last one leaves", async () => {
    await lifecycle.start();
    sessions.active = 1;
    const stopping = lifecycle.stop(60_000);
    await graceBegun();
    expect(context.stopping).toBe(true);
    sessions.active = 0;
    lifecycle.sessionLeft();
    await stopping;
    expect(sessions.interrupted).toBe(0);
  });

  it("cuts the grace short on a second stop without grace that comes before the grace begins", async () => {
    await lifecycle.start();
    sessions.active = 1;
    // Both at once: the second arrives while the first still closes the doors. An hour's grace,
    // so only the cut can end this stop within the test's time.
    await Promise.all([lifecycle.stop(3_600_000), lifecycle.stop(0)]);
    expect(sessions.interrupted).toBe(1);
  });

  it("cuts the grace short on a second stop without grace (a second SIGTERM)", async () => {
    await lifecycle.start();
    sessions.active = 2;
    const first = lifecycle.stop(60_000);
    await graceBegun();
    const second = lifecycle.stop(0);
    await Promise.all([first, second]);
    expect(sessions.interrupted).toBe(1);
    const heartbeat = JSON.parse(await readFile(world.layout.dispatch.heartbeat, "utf8"));
    expect(heartbeat.active).toBe(0);
  });

  it("resolves a stop of a daemon that never started, holding no lock", async () => {
    const never = makeLifecycle();
    await never.stop();
    await never.stopped;
    await lifecycle.start();
    expect(lifecycle.started).toBe(true);
  });
});
