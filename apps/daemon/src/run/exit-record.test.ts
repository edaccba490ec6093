import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
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

/**
 * The trivial agent, with a side effect outside git: one line in side-effects.log per run. With
 * `holdFirst`, the first attempt then waits until it is stopped, so it is surely still running
 * (its end unrecorded) when the next daemon starts, however slow the machine.
 */
async function sideEffectAgent(options: { holdFirst?: boolean } = {}): Promise<string> {
  const agent = join(world.base, "side-effect-agent.cjs");
  const hold = options.holdFirst
    ? `if (!/This is attempt \\d+/.test(process.argv[2] ?? "")) { setInterval(() => {}, 1000); return; }\n`
    : "";
  await writeFile(
    agent,
    `(() => {
require("node:fs").appendFileSync(${JSON.stringify(join(world.base, "side-effects.log"))}, process.env.GSTACK_DISPATCH_ID + "\\n");
${hold}${await readFile(world.agentScript, "utf8")}
})();`,
  );
  return agent;
}

describe("an agent that has exited", () => {
  it("is not run again when the daemon is killed, again and again, between its exit and finishing", async () => {
    const agent = await sideEffectAgent();
    const id = "dispatch-exited";
    // Each daemon is killed with -9 right before finishing writes its plan.
    for (let round = 0; round < 3; round += 1) {
      const crashing = startChildDaemon(world, { crashAt: "plan", agentScript: agent });
      await waitFor(() => (crashing.output().includes("daemon ready") ? true : undefined), 30_000);
      if (round === 0) await submitDispatch(world.layout, dispatchFor(world, id, "say hi"));
      expect(await crashing.exited).toBe("SIGKILL");
    }
    daemon = testDaemon(world, {}, { agents: { codex: { command: [process.execPath, agent, "{prompt}"] } } });
    await daemon.start();
    const completion = await waitFor(() => completionOf(world.layout, id));
    expect(completion).toMatchObject({ status: "completed", retries: 0 });
    expect(await lines(join(world.base, "side-effects.log"))).toEqual([id]);
    const audit = await auditOf(world.layout);
    expect(audit.filter((event) => event.event === "spawned" && event.dispatch_id === id)).toHaveLength(1);
    expect(
      audit
        .filter((event) => event.event === "recovered" && event.dispatch_id === id)
        .map((event) => event.detail),
    ).toEqual(Array.from({ length: 3 }, () => ({ was: "exited", attempt: 1 })));
    const report = await readFile(world.layout.dispatch.completedReport(id), "utf8");
    expect(report).not.toContain("cannot be ruled out");
  }, 60_000);

  it("when its end was never recorded, runs again, and both the next attempt and the report say so", async () => {
    const agent = await sideEffectAgent({ holdFirst: true });
    const id = "dispatch-unknown";
    // Killed right after the spawn: how the agent ended is unknown to the next start. The first
    // attempt is held running, so no exit record can appear before that start stops it.
    const crashing = startChildDaemon(world, { crashAfterSpawn: true, agentScript: agent });
    await waitFor(() => (crashing.output().includes("daemon ready") ? true : undefined), 30_000);
    await submitDispatch(world.layout, dispatchFor(world, id, "say hi"));
    expect(await crashing.exited).toBe("SIGKILL");
    await waitFor(async () =>
      (await lines(join(world.base, "side-effects.log"))).length > 0 ? true : undefined,
    );
    daemon = testDaemon(world, {}, { agents: { codex: { command: [process.execPath, agent, "{prompt}"] } } });
    await daemon.start();
    const completion = await waitFor(() => completionOf(world.layout, id));
    expect(completion).toMatchObject({ status: "completed" });
    const prompts = (await lines(join(world.base, "prompts.log"))).map(
      (line) => JSON.parse(line) as { id: string; attempt: string; prompt: string },
    );
    const second = prompts.find((entry) => entry.id === id && entry.attempt === "2");
    expect(second?.prompt).toContain("interrupted before its end was recorded");
    const report = await readFile(world.layout.dispatch.completedReport(id), "utf8");
    expect(report).toContain("cannot be ruled out");
  }, 60_000);
});
