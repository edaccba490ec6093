import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { markedRunProcesses, processGroupAlive } from "@gstack/agent-runner";
import { processAlive } from "@gstack/contracts";
import { osLockHolder, readState, submitDispatch } from "@gstack/daemon-client";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, onTestFailed } from "vitest";
import { waitUntil } from "../../../../vitest.load-budget";
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
// Its process group: its supervisor's, which writes how it ended once it has.
const group = fs.readFileSync("/proc/self/stat", "utf8").split(") ").pop().split(" ")[2];
fs.appendFileSync(log, "start " + id + " " + process.pid + " " + group + "\\n");
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
        const [what, id, pid, group] = line.split(" ");
        return { what, id: String(id), pid: Number(pid), group: Number(group ?? 0) };
      });
    const ids: string[] = [];
    const deadIds: string[] = [];
    const daemonLogs: string[] = [];
    const modes = { dead: 0, racing: 0, early: 0 };
    // A failure before the final judgement (a wait that ran out) prints the daemons' logs; the
    // judgement prints its own, for the dispatches it names.
    let judged = false;
    onTestFailed(() => {
      if (!judged) console.log(daemonLogs.join("\n").slice(-200_000));
    });
    for (const [round, step] of plan.entries()) {
      modes[step.mode] += 1;
      const child = startChildDaemon(world, { agentScript: agent, maxConcurrent: 3 });
      await waitUntil(() => (child.output().includes("daemon ready") ? true : undefined), {
        idleMs: 30_000,
        what: `round ${round} (${step.mode}): the child daemon ready`,
        lastSeen: () => child.output().slice(-2000),
      });
      const roundIds = Array.from({ length: step.agents }, (_, index) => `dispatch-exit-${round}-${index}`);
      for (const id of roundIds) await submitDispatch(world.layout, dispatchFor(world, id, "sleep 0"));
      ids.push(...roundIds);
      const go = join(world.base, `go-${round}`);
      if (step.mode === "early") {
        await new Promise((done) => setTimeout(done, step.afterMs));
      } else {
        // Every agent of the round runs before anything is let go.
        let started: string[] = [];
        await waitUntil(
          async () => {
            started = (await runs()).filter((run) => run.what === "start").map((run) => run.id);
            return roundIds.every((id) => started.includes(id)) ? true : undefined;
          },
          {
            idleMs: 30_000,
            what: `round ${round} (${step.mode}): every agent of ${roundIds.join(", ")} started`,
            lastSeen: () => `started: ${started.join(", ")}; daemon output: ${child.output().slice(-2000)}`,
          },
        );
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
      // runs), and its supervisor with it, having written how it ended, before the next daemon
      // starts: those it finds ended, it must finish, not rerun. (A supervisor still alive is
      // one the next daemon must take for a run cut short, and stop.)
      // That includes a supervisor or agent the killed daemon had spawned whose program has not
      // yet logged its start (on a loaded machine Node takes seconds to get there): every process
      // carrying this world's run marker, as the next daemon's own start-up looks for them.
      let living: string[] = [];
      await waitUntil(
        async () => {
          living = [
            ...(await runs())
              .filter((run) => processAlive(run.pid) || (run.group > 0 && processGroupAlive(run.group)))
              .map((run) => `${run.id} pid ${run.pid} (group ${run.group})`),
            ...markedRunProcesses({ GSTACK_HOME: world.layout.root }, ["GSTACK_DISPATCH_ID"]).map(
              (found) => `${found.values.GSTACK_DISPATCH_ID} pid ${found.pid} (marked, not yet logged)`,
            ),
          ];
          return living.length > 0 ? undefined : true;
        },
        {
          idleMs: 30_000,
          what: `round ${round} (${step.mode}): every agent started so far ended`,
          lastSeen: () => `still alive: ${living.join(", ")}`,
        },
      );
      // And the killed daemon's lock is free: a process it was starting as it died holds the
      // lock's socket until that process runs its program (the descriptor closes on exec). One
      // that keeps it is named here, with its command line.
      let holder = "";
      await waitUntil(
        async () => {
          const held = await osLockHolder(world.layout.root, world.layout.dispatch.lock);
          if (!held) return true;
          const pid = held.pid;
          let command = "(gone since)";
          try {
            command = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ").slice(0, 300);
          } catch {}
          holder = pid === undefined ? "a process this test cannot see" : `pid ${pid}: ${command}`;
          return undefined;
        },
        {
          idleMs: 30_000,
          what: `round ${round} (${step.mode}): the killed daemon's lock free`,
          lastSeen: () => `held by ${holder}`,
        },
      );
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
    // Each dispatch is judged by every rule, and a failure names the dispatch, the rule and
    // where the dispatch stood, so the log alone says what went wrong.
    judged = true;
    const problems: string[] = [];
    for (const id of ids) {
      const found: string[] = [];
      if (lost.includes(id)) found.push("lost: no completion written");
      if (reruns.some((run) => run.id === id))
        found.push("re-run: its agent started again after it had ended");
      const ends = terminal(id).map((event) => String(event.event));
      if (ends.length !== 1 || ends[0] !== "completed") {
        found.push(`terminal audit events [${ends.join(", ")}], expected exactly [completed]`);
      }
      const completion = await completionOf(world.layout, id);
      if (completion && completion["status"] !== "completed") {
        found.push(`completion status ${String(completion["status"])}, expected completed`);
      }
      if (deadIds.includes(id)) {
        // Found ended by each daemon that found it unfinished (a later kill may cut its finishing
        // short too), never taken for a run cut short.
        const recovered = audit
          .filter((event) => event.dispatch_id === id && event.event === "recovered")
          .map((event) => String((event.detail as { was?: string } | undefined)?.was));
        if (recovered.length === 0)
          found.push("its agent ended while no daemon ran, and no restart recovered it");
        if (recovered.some((was) => was !== "exited")) {
          found.push(
            `recovered as [${recovered.join(", ")}], expected only "exited" (an agent that had ended)`,
          );
        }
      }
      if (found.length > 0)
        problems.push(`${id}: ${found.join("; ")}\n${await whereItStood(id, completion)}`);
    }
    if (problems.length > 0) {
      const failing = ids.filter((id) => problems.some((problem) => problem.startsWith(`${id}:`)));
      console.log(
        `exit loop failed for ${failing.join(", ")}:\n${problems.join("\n")}\n` +
          `daemon log lines naming them:\n${daemonLogs
            .flatMap((entry) => entry.split("\n"))
            .filter((line) => line.startsWith("round ") || failing.some((id) => line.includes(id)))
            .join("\n")}`,
      );
    }
    expect(problems, problems.join("\n")).toEqual([]);

    /** The dispatch's state, completion, audit trail and agent runs, as one block of text. */
    async function whereItStood(
      id: string,
      completion: Record<string, unknown> | undefined,
    ): Promise<string> {
      const state = await readState(world.layout, id);
      const stateText = state
        ? JSON.stringify({
            status: state.status,
            attempt: state.attempt,
            retries: state.retries,
            restarts: state.restarts,
            pid: state.pid,
            last_failure: state.last_failure,
            updated_at: state.updated_at,
          })
        : "none";
      const completionText = completion
        ? JSON.stringify({
            status: completion["status"],
            failure: completion["failure"],
            retries: completion["retries"],
          })
        : "none";
      const trail = audit
        .filter((event) => event.dispatch_id === id)
        .map((event) =>
          [event.ts, event.event, event.reason, event.detail ? JSON.stringify(event.detail) : undefined]
            .filter((part) => part !== undefined)
            .join(" "),
        );
      const agentRuns = all.filter((run) => run.id === id).map((run) => `${run.what} pid ${run.pid}`);
      return [
        `  state: ${stateText}`,
        `  completion: ${completionText}`,
        `  audit: ${trail.length > 0 ? `\n    ${trail.join("\n    ")}` : "none"}`,
        `  agent runs: ${agentRuns.join(", ") || "none"}`,
      ].join("\n");
    }
  }, 1_800_000);
});
