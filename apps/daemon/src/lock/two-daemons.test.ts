import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  startChildDaemon,
  type TestWorld,
  waitFor,
} from "../test-support";

let world: TestWorld;
const started: Array<ReturnType<typeof startChildDaemon>> = [];

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async ({ task }) => {
  // A failure names what each daemon said and what was audited, run by run.
  if (task.result?.state === "fail") {
    const said = started.map((daemon, index) => `--- daemon ${index + 1}:\n${daemon.output()}`);
    const audit = (await auditOf(world.layout)).map((event) => JSON.stringify(event));
    const runs = await readFile(join(world.base, "runs.log"), "utf8").catch(() => "(none)");
    console.error([...said, "--- audit:", ...audit, "--- runs.log:", runs].join("\n"));
  }
  for (const daemon of started.splice(0)) {
    daemon.child.kill("SIGKILL");
    await daemon.exited;
  }
  await world.cleanup();
});

describe("two daemons started at the same instant after one was killed with -9 mid-dispatch", () => {
  it("never both run: each interrupted dispatch runs once more and completes once", async () => {
    const rounds = Number(process.env.TWO_DAEMONS_ROUNDS ?? 6);
    console.log(`two daemons: ${rounds} rounds (TWO_DAEMONS_ROUNDS to change)`);
    const agent = join(world.base, "counting-agent.cjs");
    await writeFile(
      agent,
      `const runsLog = ${JSON.stringify(join(world.base, "runs.log"))};
require("node:fs").appendFileSync(runsLog, process.env.GSTACK_DISPATCH_ID + "\\n");
// The first run is still running when its daemon is killed and the next one starts (an agent
// that finished while no daemon ran is finished from its exit record, never run again).
const runs = require("node:fs").readFileSync(runsLog, "utf8").split("\\n").filter((line) => line === process.env.GSTACK_DISPATCH_ID).length;
if (runs === 1) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 600000);
${await readFile(world.agentScript, "utf8")}`,
    );
    const start = () => {
      const daemon = startChildDaemon(world, { agentScript: agent });
      started.push(daemon);
      return daemon;
    };
    const runsOf = async (id: string) =>
      (await readFile(join(world.base, "runs.log"), "utf8").catch(() => ""))
        .split("\n")
        .filter((run) => run === id).length;
    const ready = (daemon: ReturnType<typeof startChildDaemon>) =>
      daemon.output().includes("daemon ready") ? true : undefined;
    let crashed = start();
    await waitFor(() => ready(crashed), 30_000);
    for (let round = 0; round < rounds; round += 1) {
      const id = `dispatch-two-${round}`;
      await submitDispatch(world.layout, dispatchFor(world, id, "sleep 400"));
      // The agent's own first line, not the daemon's `spawned` event: that is written once the
      // process exists, which may be before it has run a line, and the next start stops it.
      await waitFor(async () => ((await runsOf(id)) === 1 ? true : undefined));
      // Killed while the dispatch runs: its lock file stays behind.
      crashed.child.kill("SIGKILL");
      await crashed.exited;
      const pair = [start(), start()];
      // One is ready and the other has exited refusing, or both are ready (the failure).
      await waitFor(async () => {
        const readyCount = pair.filter((daemon) => ready(daemon)).length;
        const refused = pair.filter((daemon) => daemon.child.exitCode !== null).length;
        return readyCount === 2 || (readyCount === 1 && refused === 1) ? true : undefined;
      }, 30_000);
      expect(pair.filter((daemon) => ready(daemon))).toHaveLength(1);
      const loser = pair.find((daemon) => !ready(daemon));
      expect(loser?.output()).toMatch(/another gstack-dispatch daemon .*is already running/);
      await waitFor(() => completionOf(world.layout, id), 30_000);
      crashed = pair.find((daemon) => ready(daemon)) as ReturnType<typeof startChildDaemon>;
    }
    const runs = (await readFile(join(world.base, "runs.log"), "utf8")).split("\n").filter(Boolean);
    const audit = await auditOf(world.layout);
    for (let round = 0; round < rounds; round += 1) {
      const id = `dispatch-two-${round}`;
      // Once by the daemon killed, once more by the one that took over: never by two.
      expect(runs.filter((run) => run === id)).toHaveLength(2);
      expect(audit.filter((event) => event.event === "completed" && event.dispatch_id === id)).toHaveLength(
        1,
      );
    }
  }, 300_000);
});
