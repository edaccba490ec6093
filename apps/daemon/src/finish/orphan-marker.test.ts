import { readFileSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { readSupervisedExit } from "@gstack/agent-runner";
import { readState, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../daemon";
import { supervisedExitPath } from "../run/exit-record";
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
let leftovers: number[] = [];

beforeEach(async () => {
  world = await makeWorld();
  leftovers = [];
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  for (const pid of leftovers) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
  await world.cleanup();
});

/**
 * True while a process runs: not gone and not a zombie. An orphan's new parent may be slow to
 * reap it (or never do, as PID 1 in some containers), so signal 0 is not enough.
 */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !["Z", "X"].includes(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[0] ?? "");
  } catch {
    return false;
  }
}

/**
 * An agent whose first run starts a helper in a session of its own (as a dev server would),
 * records both pids and then works for a minute; any later run reports at once.
 */
const SLOW_FIRST_AGENT = `
const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
// The test world's folder, beside the state root (the cwd is the dispatch's worktree under it).
const out = path.dirname(process.env.GSTACK_HOME);
const record = path.join(out, "first-run.json");
fs.appendFileSync(path.join(out, "runs.log"), process.pid + "\\n");
if (fs.existsSync(record)) {
  console.log("## What shipped\\n- done\\n## Decisions made\\n- none\\n## Learnings logged\\n- none\\n## Needs human judgment\\n- Nothing");
} else {
  const helper = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { detached: true, stdio: "ignore" });
  helper.unref();
  fs.writeFileSync(record, JSON.stringify({ supervisor: process.ppid, agent: process.pid, helper: helper.pid }));
  setTimeout(() => {}, 60_000);
}
`;

describe.runIf(process.platform === "linux")(
  "a daemon killed between an agent's spawn and recording its pid",
  () => {
    it("stops that agent and what it started at the next start, by the run marker, then runs the dispatch once more", async () => {
      const agent = join(world.base, "slow-first-agent.cjs");
      await writeFile(agent, SLOW_FIRST_AGENT);
      const crashing = startChildDaemon(world, { agentScript: agent, crashAfterSpawn: true });
      await waitFor(() => (crashing.output().includes("daemon ready") ? true : undefined), 30_000);
      await submitDispatch(world.layout, dispatchFor(world, "dispatch-unrecorded", "work"));
      expect(await crashing.exited).toBe("SIGKILL");
      // Written in place by the agent: read until it is whole, not merely there.
      const first = await waitFor(() =>
        readFile(join(world.base, "first-run.json"), "utf8")
          .then((text) => JSON.parse(text) as { supervisor: number; agent: number; helper: number })
          .catch(() => undefined),
      );
      leftovers = [first.supervisor, first.agent, first.helper];
      // The daemon died before it wrote the pid: nothing on disk names the running agent.
      const state = await readState(world.layout, "dispatch-unrecorded");
      expect(state).toMatchObject({ status: "running", attempt: 1 });
      expect(state?.pid).toBeUndefined();
      expect(running(first.agent)).toBe(true);
      expect(running(first.helper)).toBe(true);

      daemon = testDaemon(
        world,
        {},
        { agents: { codex: { command: [process.execPath, agent, "{prompt}"] } } },
      );
      await daemon.start();
      // Stopped during the start, before anything runs again.
      expect(running(first.supervisor)).toBe(false);
      expect(running(first.agent)).toBe(false);
      expect(running(first.helper)).toBe(false);
      const killed = (await auditOf(world.layout)).find(
        (event) => event.event === "orphan_killed" && event.dispatch_id === "dispatch-unrecorded",
      );
      expect(killed?.detail).toMatchObject({ found_by: "run marker" });
      expect([...((killed?.detail as { pids?: number[] } | undefined)?.pids ?? [])].sort()).toEqual(
        // The agent's exit supervisor (its parent) carries the marker too.
        [first.supervisor, first.agent, first.helper].sort(),
      );
      // The supervisor was signalled with its agent, not after it: what it wrote (unless it was
      // killed outright first) says the run was stopped, so it is run again, not finished from it.
      const firstExit = readSupervisedExit(supervisedExitPath(world.layout, "dispatch-unrecorded", 1));
      expect(firstExit === undefined || firstExit.stopped !== undefined, JSON.stringify(firstExit)).toBe(
        true,
      );
      expect(await waitFor(() => completionOf(world.layout, "dispatch-unrecorded"))).toMatchObject({
        status: "completed",
        retries: 1,
      });
      const runs = (await readFile(join(world.base, "runs.log"), "utf8")).split("\n").filter(Boolean);
      expect(runs).toHaveLength(2);
    });
  },
);
