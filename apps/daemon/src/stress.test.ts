import { execFileSync } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { processAlive } from "@gstack/contracts";
import { readStatus, submitDispatch } from "@gstack/daemon-client";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Daemon } from "./daemon";
import { useDaemonWorld } from "./daemon-test-world";
import {
  auditOf,
  completionOf,
  dispatchFor,
  startChildDaemon,
  type TestWorld,
  testDaemon,
  waitFor,
} from "./test-support";

const daemonWorld = useDaemonWorld();
let world: TestWorld;
let daemon: Daemon | undefined;

beforeEach(() => {
  world = daemonWorld.world;
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
});

async function lines(path: string): Promise<string[]> {
  try {
    return (await readFile(path, "utf8")).split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

// 100 dispatches a burst in a test run (at max_concurrent 8, thirteen waves of claims racing
// the next dispatch's arrival); BURST_DISPATCHES=1000 (or more) for the long run.
const burst = Number(process.env.BURST_DISPATCHES ?? 100);

describe("a burst of dispatches", () => {
  for (const maxConcurrent of [2, 8]) {
    it(`runs each of ${burst} dispatches exactly once at max_concurrent ${maxConcurrent}`, async () => {
      const runs = join(world.base, "runs.log");
      daemon = new Daemon({
        root: world.root,
        claudeBinary: "/nonexistent/claude",
        openclawWorkspace: false,
        settings: {
          trusted_repos: [world.base],
          max_concurrent: maxConcurrent,
          // A shell agent: one line per run, appended whole (short writes to O_APPEND).
          agents: {
            codex: {
              command: ["/bin/sh", "-c", `echo "$GSTACK_DISPATCH_ID" >> ${runs}`, "agent", "{prompt}"],
            },
          },
        },
      });
      await daemon.start();
      const ids = Array.from({ length: burst }, (_, index) => `dispatch-burst-${index}`);
      await Promise.all(ids.map((id) => submitDispatch(world.layout, dispatchFor(world, id, "say hi"))));
      for (const id of ids) await waitFor(() => completionOf(world.layout, id), 150_000);
      const counted = new Map<string, number>();
      for (const line of await lines(runs)) counted.set(line, (counted.get(line) ?? 0) + 1);
      expect(counted.size).toBe(burst);
      expect([...counted.values()].every((count) => count === 1)).toBe(true);
      const spawned = (await auditOf(world.layout)).filter((event) => event.event === "spawned");
      expect(spawned).toHaveLength(burst);
    }, 600_000);
  }
});

describe("a daemon killed with SIGKILL at random moments", () => {
  it("ends every dispatch with exactly one completion and leaves no process", async () => {
    const seed = Number(process.env.KILL_LOOP_SEED ?? 20261123);
    // 40 rounds in a test run (the first 40 of the seed's; 80 dispatches, each of the five tasks
    // sixteen times), the daemon killed at a seeded moment in each.
    const rounds = Number(process.env.KILL_LOOP_ROUNDS ?? 40);
    console.log(`kill loop: seed ${seed}, ${rounds} rounds (KILL_LOOP_SEED / KILL_LOOP_ROUNDS to change)`);
    const plan = fc.sample(
      fc.record({ waitMs: fc.integer({ min: 0, max: 1500 }), killAgent: fc.boolean() }),
      { seed, numRuns: rounds },
    );
    // An agent that records its pid, sleeps a little and commits; some fail once to be retried.
    const agent = join(world.base, "pid-agent.cjs");
    await writeFile(
      agent,
      `const fs = require("node:fs"); const path = require("node:path");
fs.appendFileSync(path.join(path.dirname(process.env.GSTACK_HOME), "agent-pids.log"), process.pid + "\\n");
${await readFile(world.agentScript, "utf8")}`,
    );
    const ids: string[] = [];
    const tasks = ["sleep 400", "rate-limit-once", "sleep 900", "commit", "sleep 200"];
    for (const [round, step] of plan.entries()) {
      const child = startChildDaemon(world, { agentScript: agent, maxConcurrent: 2 });
      await waitFor(() => (child.output().includes("daemon ready") ? true : undefined), 30_000);
      for (let index = 0; index < 2; index += 1) {
        const id = `dispatch-kill-${round}-${index}`;
        const task = tasks[(round + index) % tasks.length] as string;
        ids.push(id);
        await submitDispatch(
          world.layout,
          dispatchFor(world, id, task === "commit" ? `commit file-${round}-${index}.txt` : task),
        );
      }
      await new Promise((done) => setTimeout(done, step.waitMs));
      if (step.killAgent) {
        for (const pid of await lines(join(world.base, "agent-pids.log"))) {
          try {
            process.kill(Number(pid), "SIGKILL");
          } catch {}
        }
      }
      child.child.kill("SIGKILL");
      await child.exited;
    }
    daemon = testDaemon(
      world,
      { retryDelayMs: { rateLimit: 50, other: 50 } },
      { agents: { codex: { command: [process.execPath, agent, "{prompt}"] } } },
    );
    await daemon.start();
    for (const id of ids) await waitFor(() => completionOf(world.layout, id), 60_000);
    const audit = await auditOf(world.layout);
    for (const id of ids) {
      const terminal = audit.filter(
        (event) =>
          event.dispatch_id === id &&
          ["completed", "failed", "cancelled", "timeout"].includes(String(event.event)),
      );
      expect(terminal.map((event) => `${id} ${event.event}`)).toHaveLength(1);
    }
    await daemon.stop(0);
    daemon = undefined;
    const status = await readStatus(world.layout);
    expect(status.sessions.active).toBe(0);
    expect(status.sessions.queued).toBe(0);
    // Agents whose daemon died before recording them are stopped by the next start (run marker),
    // or end within their own short run.
    const pids = (await lines(join(world.base, "agent-pids.log"))).map(Number);
    await waitFor(() => (pids.every((pid) => !processAlive(pid)) ? true : undefined), 5_000);
    const children = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" })
      .split("\n")
      .filter((line) => line.includes(world.base));
    expect(children).toEqual([]);
  }, 600_000);
});
