import { execFileSync } from "node:child_process";
import { appendFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { formatStatus, readStatus, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it, onTestFailed } from "vitest";
import type { Daemon } from "../daemon";
import { CALLBACK_SECRET, startReceiver, type TestReceiver } from "../deliver/delivery-test-support";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";
import { canMountTmpfs, fill } from "./tmpfs-test-support";

const mountable = canMountTmpfs();
if (!mountable) {
  console.log("disk-full test skipped: a tmpfs cannot be mounted here (it needs root on Linux)");
}

let world: TestWorld;
let daemon: Daemon | undefined;
let mounted = false;
let receiver: TestReceiver | undefined;

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await receiver?.close();
  receiver = undefined;
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
    // The audit log: every line whole (a torn one would not parse), each dispatch started and
    // ended once, whatever met the full disk meanwhile.
    const audit = (await readFile(world.layout.dispatch.audit, "utf8")).split("\n").filter(Boolean);
    const events = audit.map((line) => JSON.parse(line) as { event: string; dispatch_id?: string });
    for (const id of ids) {
      const mine = events.filter((event) => event.dispatch_id === id).map((event) => event.event);
      expect([id, mine.filter((event) => event === "spawned").length]).toEqual([id, 1]);
      expect([id, mine.filter((event) => event === "completed").length]).toEqual([id, 1]);
      expect([id, mine.filter((event) => event === "queued").length]).toEqual([id, 1]);
    }
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
    // The completion is delivered to a callback receiver on loopback, once room returns.
    receiver = await startReceiver(() => ({ status: 200 }));
    await writeFile(world.layout.callbackSecret, CALLBACK_SECRET, { mode: 0o600 });
    const lines: string[] = [];
    onTestFailed(() => console.log(`daemon log:\n${lines.join("\n")}`));
    daemon = testDaemon(
      world,
      { log: (line) => lines.push(line) },
      {
        heartbeat_seconds: 1,
        openclaw_callback_url: receiver.url("/gstack/completion"),
        agents: { codex: { command: [process.execPath, agent, "{prompt}"] } },
      },
    );
    await daemon.start();
    const id = "dispatch-ends-full";
    await submitDispatch(world.layout, dispatchFor(world, id, "sleep 0"));
    await waitFor(async () => ((await readFile(started).catch(() => undefined)) ? true : undefined), 30_000);
    await waitFor(async () =>
      (await auditOf(world.layout)).some((event) => event.dispatch_id === id && event.event === "spawned")
        ? true
        : undefined,
    );
    const filler = join(world.root, "filler");
    await fill(filler);
    await appendFile(go, "");
    // The agent's output copy cannot be written and finishing meets the full disk.
    await waitFor(() => (lines.some((line) => line.startsWith("disk full")) ? true : undefined), 30_000);
    // Nothing is torn meanwhile: every line of the audit log reads whole, and the end is not
    // written before its report can be.
    const whileFull = await auditOf(world.layout);
    expect(whileFull.length).toBeGreaterThan(0);
    expect(whileFull.some((event) => event.dispatch_id === id && event.event === "completed")).toBe(false);
    // The report was never in the output copy: it is kept from the output held in memory.
    const copy = await readFile(join(world.layout.dispatch.sessionDir(id), "stream-1.jsonl"), "utf8");
    expect(copy).not.toContain("The repo uses plain node for tests");
    // The receiver's requests that carry this dispatch (its endpoint is also probed at start).
    const deliveries = () => receiver?.requests.filter((request) => request.body.includes(id)) ?? [];
    expect(deliveries()).toEqual([]);
    await rm(filler);
    const completion = await waitFor(() => completionOf(world.layout, id), 60_000);
    expect(completion).toMatchObject({ status: "completed" });
    expect(completion.artifacts).toContain("learnings:1");
    const report = await readFile(world.layout.dispatch.completedReport(id), "utf8");
    expect(report).not.toContain("it wrote no report");
    expect(report).toContain("The repo uses plain node for tests");
    expect(await readFile(world.layout.project("acme-widget").learnings, "utf8")).toContain(
      "The repo uses plain node for tests",
    );
    // Delivered once, with the report, when there was room again.
    const delivered = await waitFor(() => (deliveries().length > 0 ? deliveries() : undefined), 60_000);
    expect(delivered).toHaveLength(1);
    expect(delivered[0]?.body).toContain("The repo uses plain node for tests");
    // Every event of the dispatch written, once each and in order, none torn.
    const events = await waitFor(async () => {
      const audit = (await auditOf(world.layout)).filter((event) => event.dispatch_id === id);
      return audit.some((event) => event.event === "callback_sent") ? audit : undefined;
    });
    expect(events.map((event) => event.event)).toEqual([
      "validated",
      "queued",
      "worktree_created",
      "spawned",
      "learnings_recorded",
      "activity_recorded",
      "completed",
      "callback_sent",
    ]);
  }, 120_000);
});
