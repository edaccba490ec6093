import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../daemon";
import { submitDispatch } from "../submit";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  startChildDaemon,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";
import { exitRecordPath, supervisedExitPath } from "./exit-record";

let world: TestWorld;
let daemon: Daemon | undefined;

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
});

async function lines(path: string): Promise<string[]> {
  try {
    return (await readFile(path, "utf8")).split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

describe("agents that finish while their daemon is dead", () => {
  it("are finished from their supervisor's record after a kill -9, never run again", async () => {
    const seed = Number(process.env.EXIT_LOOP_SEED ?? 20261127);
    const rounds = Number(process.env.EXIT_LOOP_ROUNDS ?? 4);
    console.log(`exit loop: seed ${seed}, ${rounds} rounds (EXIT_LOOP_SEED / EXIT_LOOP_ROUNDS to change)`);
    const plan = fc.sample(
      fc.record({
        agents: fc.integer({ min: 1, max: 3 }),
        // "dead": the agents finish only once the daemon is gone; "racing": they are let go, and
        // the daemon is killed `afterMs` later, while it may be recording or finishing them.
        mode: fc.constantFrom("dead", "racing"),
        afterMs: fc.integer({ min: 0, max: 300 }),
      }),
      { seed, numRuns: rounds },
    );
    // Records each start (the side effect counted), waits for its round's go file, then ends
    // as the plain test agent does with `sleep 0`: a report on stdout.
    const agent = join(world.base, "gated-agent.cjs");
    await writeFile(
      agent,
      `const fs = require("node:fs"); const path = require("node:path");
const OUT = path.dirname(process.env.GSTACK_HOME);
const id = process.env.GSTACK_DISPATCH_ID;
fs.appendFileSync(path.join(OUT, "agent-starts.log"), id + "\\n");
const go = path.join(OUT, "go-" + id.split("-")[2]);
const wait = () => (fs.existsSync(go) ? require(${JSON.stringify(world.agentScript)}) : setTimeout(wait, 20));
wait();
`,
    );
    const starts = join(world.base, "agent-starts.log");
    const ids: string[] = [];
    const deadIds: string[] = [];
    for (const [round, step] of plan.entries()) {
      const child = startChildDaemon(world, { agentScript: agent, maxConcurrent: 3 });
      await waitFor(() => (child.output().includes("daemon ready") ? true : undefined), 30_000);
      const roundIds = Array.from({ length: step.agents }, (_, index) => `dispatch-exit-${round}-${index}`);
      for (const id of roundIds) await submitDispatch(world.layout, dispatchFor(world, id, "sleep 0"));
      ids.push(...roundIds);
      // Every agent of the round runs before anything is let go.
      await waitFor(async () => {
        const started = await lines(starts);
        return roundIds.every((id) => started.includes(id)) ? true : undefined;
      }, 30_000);
      const go = join(world.base, `go-${round}`);
      if (step.mode === "racing") {
        await writeFile(go, "");
        await new Promise((done) => setTimeout(done, step.afterMs));
      }
      child.child.kill("SIGKILL");
      await child.exited;
      if (step.mode === "dead") {
        deadIds.push(...roundIds);
        await writeFile(go, "");
      }
      // Each agent has ended and been recorded, by its supervisor at least.
      await waitFor(
        () =>
          roundIds.every(
            (id) =>
              existsSync(supervisedExitPath(world.layout, id, 1)) ||
              existsSync(exitRecordPath(world.layout, id, 1)),
          )
            ? true
            : undefined,
        30_000,
      );
    }
    daemon = testDaemon(world, {}, { agents: { codex: { command: [process.execPath, agent, "{prompt}"] } } });
    await daemon.start();
    for (const id of ids) await waitFor(() => completionOf(world.layout, id), 60_000);
    const started = await lines(starts);
    const audit = await auditOf(world.layout);
    for (const id of ids) {
      expect(started.filter((line) => line === id).map(() => `${id} started`)).toEqual([`${id} started`]);
      const terminal = audit.filter(
        (event) =>
          event.dispatch_id === id &&
          ["completed", "failed", "cancelled", "timeout"].includes(String(event.event)),
      );
      expect(terminal.map((event) => `${id} ${event.event}`)).toEqual([`${id} completed`]);
      expect(await completionOf(world.layout, id)).toMatchObject({ status: "completed" });
    }
    for (const id of deadIds) {
      const recovered = audit.filter((event) => event.dispatch_id === id && event.event === "recovered");
      expect(recovered).toMatchObject([{ detail: { was: "exited" } }]);
    }
  }, 600_000);
});
