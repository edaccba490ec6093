import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { isoWeekOf } from "@gstack/contracts";
import { readState, submitDispatch } from "@gstack/daemon-client";
import { beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../daemon";
import { useDaemonWorld } from "../daemon-test-world";
import {
  auditOf,
  completionOf,
  dispatchFor,
  startChildDaemon,
  type TestWorld,
  waitFor,
} from "../test-support";
import { COMPLETION_STEPS } from "./completion";

const daemonWorld = useDaemonWorld();
let world: TestWorld;
let daemon: Daemon | undefined;

beforeEach(() => {
  world = daemonWorld.world;
  daemon = undefined;
});

async function linesWith(path: string, needle: string): Promise<number> {
  try {
    return (await readFile(path, "utf8")).split("\n").filter((line) => line.includes(needle)).length;
  } catch {
    return 0;
  }
}

describe("a daemon killed with SIGKILL inside finishing", () => {
  for (const step of COMPLETION_STEPS) {
    it(`recovers to exactly one completion when killed before '${step}'`, async () => {
      const id = `dispatch-crash-${step}`;
      const crashing = startChildDaemon(world, { crashAt: step });
      await waitFor(() => (crashing.output().includes("daemon ready") ? true : undefined));
      await submitDispatch(world.layout, dispatchFor(world, id, `commit ${step}.txt`));
      expect(await crashing.exited).toBe("SIGKILL");

      daemon = await daemonWorld.start();
      const completion = await waitFor(() => completionOf(world.layout, id));
      await waitFor(async () =>
        (await readState(world.layout, id))?.status === "finished" ? true : undefined,
      );
      await daemon.stop(0);
      daemon = undefined;

      expect(completion).toMatchObject({ status: "completed", commits: 1 });
      // The worktree's measure (taken as the plan was made) is kept, whichever plan finished it.
      expect((await readState(world.layout, id))?.worktree_measure).toMatchObject({ commits: 1 });
      // The agent's exit is recorded before finishing begins: the run is never made again.
      const runs = await linesWith(join(world.base, "prompts.log"), `"id":"${id}"`);
      expect(runs).toBe(1);
      expect(completion.retries).toBe(0);
      const activity = await linesWith(
        world.layout.activity.week(isoWeekOf(new Date())),
        `"dispatch_id":"${id}"`,
      );
      expect(activity).toBe(1);
      const learnings = await linesWith(
        world.layout.project("acme-widget").learnings,
        `"origin":"dispatch:${id}"`,
      );
      expect(learnings).toBe(1);
      const audit = (await auditOf(world.layout)).filter((event) => event.dispatch_id === id);
      expect(audit.filter((event) => event.event === "completed")).toHaveLength(1);
      // What finishing wrote is audited once each, a crash between a write and its event included.
      expect(audit.filter((event) => event.event === "learnings_recorded")).toHaveLength(1);
      expect(audit.filter((event) => event.event === "activity_recorded")).toHaveLength(1);
      const report = await readFile(world.layout.dispatch.completedReport(id), "utf8");
      expect(report).toContain(`dispatch_id: ${id}`);
      expect(report).not.toContain("Ran 2 times");
      const sessionFiles = await readdir(world.layout.dispatch.sessionDir(id));
      expect(sessionFiles).not.toContain("finishing.json");
      expect(sessionFiles).toContain("dispatch.json");
      expect(await readdir(world.layout.dispatch.claimed)).toEqual([]);
      expect(
        (await readdir(world.layout.dispatch.completed)).filter((name) => name.endsWith(".json")),
      ).toEqual([`${id}.json`]);
    });
  }

  it("finishes from a plan an older daemon wrote, without the worktree's measure, by measuring then", async () => {
    const id = "dispatch-crash-older-plan";
    const crashing = startChildDaemon(world, { crashAt: "completion-json" });
    await waitFor(() => (crashing.output().includes("daemon ready") ? true : undefined));
    await submitDispatch(world.layout, dispatchFor(world, id, "commit older-plan.txt"));
    expect(await crashing.exited).toBe("SIGKILL");
    const planFile = join(world.layout.dispatch.sessionDir(id), "finishing.json");
    const plan = JSON.parse(await readFile(planFile, "utf8")) as { measure?: { commits: number } };
    expect(plan.measure).toMatchObject({ commits: 1 });
    delete plan.measure;
    await writeFile(planFile, JSON.stringify(plan));

    daemon = await daemonWorld.start();
    await waitFor(async () =>
      (await readState(world.layout, id))?.status === "finished" ? true : undefined,
    );
    await daemon.stop(0);
    daemon = undefined;
    expect(await completionOf(world.layout, id)).toMatchObject({ status: "completed", commits: 1 });
    const measure = (await readState(world.layout, id))?.worktree_measure;
    expect(measure).toMatchObject({ commits: 1 });
    expect(measure?.disk_bytes).toBeGreaterThan(0);
  });
});
