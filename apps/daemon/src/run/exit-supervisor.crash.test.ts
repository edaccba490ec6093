import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { submitDispatch } from "@gstack/daemon-client";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, onTestFailed } from "vitest";
import type { Daemon } from "../daemon";
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
  it("are finished from their supervisor's record after kill -9 at seeded moments, never run again, none lost, none twice", async () => {
    const seed = Number(process.env.EXIT_LOOP_SEED ?? 20261127);
    const rounds = Number(process.env.EXIT_LOOP_ROUNDS ?? 24);
    console.log(`exit loop: seed ${seed}, ${rounds} rounds (EXIT_LOOP_SEED / EXIT_LOOP_ROUNDS to change)`);
    const plan = fc.sample(
      fc.record({
        agents: fc.integer({ min: 1, max: 3 }),
        // "dead": the agents finish only once the daemon is gone; "racing": they are let go, and
        // the daemon is killed `afterMs` later, while it may be recording or finishing them;
        // "early": the daemon is killed `afterMs` after the dispatches are handed in (before,
        // during or after their agents start), and the agents are let go once it is dead.
        mode: fc.constantFrom("dead", "racing", "early"),
        afterMs: fc.integer({ min: 0, max: 400 }),
      }),
      { seed, numRuns: rounds },
    );
    // Logs its start (with its pid) and its end, the side effects counted, waits for its round's
    // go file, then ends as the plain test agent does with `sleep 0`: a report on stdout.
    const agent = join(world.base, "gated-agent.cjs");
    await writeFile(
      agent,
      `const fs = require("node:fs"); const path = require("node:path");
const OUT = path.dirname(process.env.GSTACK_HOME);
const id = process.env.GSTACK_DISPATCH_ID;
const log = path.join(OUT, "agent-runs.log");
fs.appendFileSync(log, "start " + id + " " + process.pid + "\\n");
const go = path.join(OUT, "go-" + id.split("-")[2]);
const wait = () => {
  if (!fs.existsSync(go)) return setTimeout(wait, 20);
  fs.appendFileSync(log, "end " + id + " " + process.pid + "\\n");
  require(${JSON.stringify(world.agentScript)});
};
wait();
`,
    );
    const runsLog = join(world.base, "agent-runs.log");
    const runs = async () =>
      (await lines(runsLog)).map((line) => {
        const [what, id, pid] = line.split(" ");
        return { what, id: String(id), pid: Number(pid) };
      });
    const alive = (pid: number) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const ids: string[] = [];
    const deadIds: string[] = [];
    const daemonLogs: string[] = [];
    onTestFailed(() => console.log(daemonLogs.join("\n")));
    const modes = { dead: 0, racing: 0, early: 0 };
    for (const [round, step] of plan.entries()) {
      modes[step.mode] += 1;
      const child = startChildDaemon(world, { agentScript: agent, maxConcurrent: 3 });
      await waitFor(() => (child.output().includes("daemon ready") ? true : undefined), 30_000);
      const roundIds = Array.from({ length: step.agents }, (_, index) => `dispatch-exit-${round}-${index}`);
      for (const id of roundIds) await submitDispatch(world.layout, dispatchFor(world, id, "sleep 0"));
      ids.push(...roundIds);
      const go = join(world.base, `go-${round}`);
      if (step.mode === "early") {
        await new Promise((done) => setTimeout(done, step.afterMs));
      } else {
        // Every agent of the round runs before anything is let go.
        await waitFor(async () => {
          const started = (await runs()).filter((run) => run.what === "start").map((run) => run.id);
          return roundIds.every((id) => started.includes(id)) ? true : undefined;
        }, 30_000);
      }
      if (step.mode === "racing") {
        await writeFile(go, "");
        await new Promise((done) => setTimeout(done, step.afterMs));
      }
      child.child.kill("SIGKILL");
      await child.exited;
      daemonLogs.push(`round ${round} (${step.mode}, ${step.afterMs} ms):`, child.output());
      if (step.mode === "dead") deadIds.push(...roundIds);
      await writeFile(go, "");
      // Every agent started so far has ended (by itself: nothing stops them while no daemon
      // runs) before the next daemon starts: those it finds ended, it must finish, not rerun.
      await waitFor(async () => ((await runs()).some((run) => alive(run.pid)) ? undefined : true), 30_000);
    }
    daemonLogs.push("last daemon:");
    daemon = testDaemon(
      world,
      { log: (line) => daemonLogs.push(line) },
      { agents: { codex: { command: [process.execPath, agent, "{prompt}"] } } },
    );
    await daemon.start();
    const lost: string[] = [];
    for (const id of ids) {
      await waitFor(() => completionOf(world.layout, id), 60_000).catch(() => lost.push(id));
    }
    const all = await runs();
    const audit = await auditOf(world.layout);
    // A re-run of a finished agent: a start of a dispatch after one of its agents had ended.
    const reruns = ids.flatMap((id) => {
      const mine = all.filter((run) => run.id === id);
      const firstEnd = mine.findIndex((run) => run.what === "end");
      return firstEnd < 0 ? [] : mine.slice(firstEnd + 1).filter((run) => run.what === "start");
    });
    const terminal = (id: string) =>
      audit.filter(
        (event) =>
          event.dispatch_id === id &&
          ["completed", "failed", "cancelled", "timeout"].includes(String(event.event)),
      );
    const twice = ids.filter((id) => terminal(id).length !== 1);
    const restarted = ids.filter(
      (id) => all.filter((run) => run.id === id && run.what === "start").length > 1,
    );
    const fromRecord = audit.filter(
      (event) =>
        event.event === "recovered" && (event.detail as { was?: string } | undefined)?.was === "exited",
    ).length;
    console.log(
      `exit loop: ${rounds} rounds (${modes.dead} dead, ${modes.racing} racing, ${modes.early} early), ` +
        `${ids.length} dispatches; re-runs of finished agents ${reruns.length}, lost ${lost.length}, ` +
        `finished twice ${twice.length}; ${fromRecord} restarts found an agent ended and finished it from its record, ` +
        `${restarted.length} started again after being cut before they finished`,
    );
    expect({ reruns, lost, twice }).toEqual({ reruns: [], lost: [], twice: [] });
    for (const id of ids) {
      expect(terminal(id).map((event) => `${id} ${event.event}`)).toEqual([`${id} completed`]);
      expect(await completionOf(world.layout, id)).toMatchObject({ status: "completed" });
    }
    for (const id of deadIds) {
      // Found ended by each daemon that found it unfinished (a later kill may cut its finishing
      // short too), never taken for a run cut short.
      const recovered = audit
        .filter((event) => event.dispatch_id === id && event.event === "recovered")
        .map((event) => `${id} ${(event.detail as { was?: string } | undefined)?.was}`);
      expect(recovered.length).toBeGreaterThan(0);
      expect(recovered).toEqual(recovered.map(() => `${id} exited`));
    }
  }, 1_800_000);
});
