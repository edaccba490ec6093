import { execFileSync } from "node:child_process";
import { appendFile, mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../daemon";
import { formatStatus, readStatus } from "../status";
import { submitDispatch } from "../submit";
import { completionOf, dispatchFor, makeWorld, type TestWorld, testDaemon, waitFor } from "../test-support";
import { canMountTmpfs, fill } from "./tmpfs-test-support";

const mountable = canMountTmpfs();
if (!mountable) {
  console.log("disk-full test skipped: a tmpfs cannot be mounted here (it needs root on Linux)");
}

let world: TestWorld;
let daemon: Daemon | undefined;
let mounted = false;

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  if (mounted) execFileSync("umount", [world.root]);
  mounted = false;
  await world.cleanup();
});

describe.skipIf(!mountable)("the state root on a disk that fills up and frees again", () => {
  it("runs every dispatch once, says 'disk full' meanwhile and resumes without a restart", async () => {
    await mkdir(world.root, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", world.root]);
    mounted = true;
    const agent = join(world.base, "counting-agent.cjs");
    await appendFile(
      agent,
      `require("node:fs").appendFileSync(${JSON.stringify(join(world.base, "runs.log"))}, process.env.GSTACK_DISPATCH_ID + "\\n");
${await readFile(world.agentScript, "utf8")}`,
    );
    const lines: string[] = [];
    daemon = testDaemon(
      world,
      { log: (line) => lines.push(line) },
      {
        max_concurrent: 2,
        heartbeat_seconds: 1,
        agents: { codex: { command: [process.execPath, agent, "{prompt}"] } },
      },
    );
    await daemon.start();
    const ids = Array.from({ length: 30 }, (_, index) => `dispatch-full-${index}`);
    for (const id of ids) await submitDispatch(world.layout, dispatchFor(world, id, "sleep 300"));
    const filler = join(world.root, "filler");
    const done = async () =>
      (await Promise.all(ids.map((id) => completionOf(world.layout, id)))).filter(Boolean).length;
    // Full three times: while dispatches are taken, while agents run, while they finish.
    for (let round = 0; round < 3; round += 1) {
      const before = await done();
      if (round > 0) await waitFor(async () => ((await done()) > before ? true : undefined), 60_000);
      await fill(filler);
      // While full: status says the daemon runs and why nothing moves, not "not running".
      const full = await waitFor(async () => {
        const text = formatStatus(await readStatus(world.layout));
        return /disk full: \d+ queued/.test(text) ? text : undefined;
      }, 30_000);
      expect(full).toMatch(/^daemon running/);
      await rm(filler);
      await waitFor(async () =>
        formatStatus(await readStatus(world.layout)).includes("disk full") ? undefined : true,
      );
    }
    // Each time, something met the full disk and waited for room.
    expect(lines.filter((line) => line.startsWith("disk has room again"))).toHaveLength(3);
    expect(lines.filter((line) => line.startsWith("could not start"))).toEqual([]);
    for (const id of ids) await waitFor(() => completionOf(world.layout, id), 60_000);
    const runs = (await readFile(join(world.base, "runs.log"), "utf8")).split("\n").filter(Boolean);
    const counted = new Map<string, number>();
    for (const id of runs) counted.set(id, (counted.get(id) ?? 0) + 1);
    expect([...counted.entries()].filter(([, count]) => count !== 1)).toEqual([]);
    expect([...counted.keys()].sort()).toEqual([...ids].sort());
    for (const id of ids) expect((await completionOf(world.layout, id))?.status).toBe("completed");
    const after = formatStatus(await readStatus(world.layout));
    expect(after).not.toContain("disk full");
    expect(after).toContain("0 queued");
  }, 120_000);

  it("keeps the report and learnings of an agent that ends while the disk is full", async () => {
    await mkdir(world.root, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", world.root]);
    mounted = true;
    // Starts, waits for the go file (beside the state root, not on the small disk), then prints
    // its report as plain text, as the plain test agent does.
    const agent = join(world.base, "gated-agent.cjs");
    const started = join(world.base, "started");
    const go = join(world.base, "go");
    await appendFile(
      agent,
      `const fs = require("node:fs");
fs.writeFileSync(${JSON.stringify(started)}, "");
const wait = () => (fs.existsSync(${JSON.stringify(go)}) ? require(${JSON.stringify(world.agentScript)}) : setTimeout(wait, 20));
wait();
`,
    );
    const lines: string[] = [];
    daemon = testDaemon(
      world,
      { log: (line) => lines.push(line) },
      { heartbeat_seconds: 1, agents: { codex: { command: [process.execPath, agent, "{prompt}"] } } },
    );
    await daemon.start();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-ends-full", "sleep 0"));
    await waitFor(async () => ((await readFile(started).catch(() => undefined)) ? true : undefined), 30_000);
    const filler = join(world.root, "filler");
    await fill(filler);
    await appendFile(go, "");
    // The agent's output copy cannot be written and finishing meets the full disk.
    await waitFor(() => (lines.some((line) => line.startsWith("disk full")) ? true : undefined), 30_000);
    await rm(filler);
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-ends-full"), 60_000);
    expect(completion).toMatchObject({ status: "completed" });
    expect(completion.artifacts).toContain("learnings:1");
    const report = await readFile(world.layout.dispatch.completedReport("dispatch-ends-full"), "utf8");
    expect(report).not.toContain("it wrote no report");
    expect(report).toContain("The repo uses plain node for tests");
    expect(await readFile(world.layout.project("acme-widget").learnings, "utf8")).toContain(
      "The repo uses plain node for tests",
    );
  }, 120_000);
});
