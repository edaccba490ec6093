import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { processAlive } from "@gstack/contracts";
import { requestCancel, submitDispatch } from "@gstack/daemon-client";
import { beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "./daemon";
import { useDaemonWorld } from "./daemon-test-world";
import { auditOf, completionOf, dispatchFor, type TestWorld, waitFor } from "./test-support";

const daemonWorld = useDaemonWorld();
let world: TestWorld;
let daemon: Daemon | undefined;

beforeEach(() => {
  world = daemonWorld.world;
  daemon = undefined;
});

async function startDaemon(settings: Record<string, unknown> = {}): Promise<Daemon> {
  daemon = await daemonWorld.start({}, settings);
  return daemon;
}

const text = (value: unknown) => JSON.stringify(value);

describe("Daemon.requestCancel", () => {
  it("signals a running agent: cancelling, then a cancelled completion", async () => {
    const running = await startDaemon();
    await running.offer(text(dispatchFor(world, "dispatch-hung", "hang")), { source: "t" });
    const childPid = Number(
      await waitFor(() => readFile(join(world.base, "child.pid"), "utf8").catch(() => undefined)),
    );
    expect(await running.requestCancel("dispatch-hung", "no longer needed")).toEqual({
      outcome: "cancelling",
    });
    expect(await waitFor(() => completionOf(world.layout, "dispatch-hung"))).toMatchObject({
      status: "cancelled",
      error_kind: "cancelled",
    });
    await waitFor(() => (processAlive(childPid) ? undefined : true), 10_000);
  });

  it("finishes a queued dispatch as cancelled before it answers", async () => {
    const running = await startDaemon({ max_concurrent: 1 });
    await running.offer(text(dispatchFor(world, "dispatch-first", "sleep 1500")), { source: "t" });
    await running.offer(text(dispatchFor(world, "dispatch-second", "commit never.txt")), { source: "t" });
    expect(await running.requestCancel("dispatch-second", "changed my mind")).toEqual({
      outcome: "cancelled",
      status: "cancelled",
    });
    expect(await completionOf(world.layout, "dispatch-second")).toMatchObject({
      status: "cancelled",
      error: "changed my mind",
    });
    expect(running.snapshot().queued).toEqual([]);
    await waitFor(() => completionOf(world.layout, "dispatch-first"));
    const prompts = await readFile(join(world.base, "prompts.log"), "utf8");
    expect(prompts).not.toContain("dispatch-second");
  });

  it("leaves a finished dispatch as it is and says how it ended", async () => {
    const lines: string[] = [];
    daemon = await daemonWorld.start({ log: (line) => lines.push(line) });
    const running = daemon;
    const decided = () => lines.filter((line) => line.startsWith("cancel dispatch-done: already finished"));
    await running.offer(text(dispatchFor(world, "dispatch-done", "commit done.txt")), { source: "t" });
    await waitFor(() => completionOf(world.layout, "dispatch-done"));
    await running.idle();
    const before = await readFile(world.layout.dispatch.completedJson("dispatch-done"), "utf8");
    const eventsBefore = (await auditOf(world.layout)).length;
    expect(await running.requestCancel("dispatch-done", "too late")).toEqual({
      outcome: "finished",
      status: "completed",
    });
    expect(decided()).toHaveLength(1);
    // Through the control file as well: the same decision, nothing changed. The file is removed
    // before the decision, so the point to look is the decision's own log line.
    await requestCancel(world.layout, "dispatch-done");
    await waitFor(() => (decided().length === 2 ? true : undefined));
    await running.idle();
    expect(await readdir(world.layout.dispatch.control)).toEqual([]);
    expect(await readFile(world.layout.dispatch.completedJson("dispatch-done"), "utf8")).toBe(before);
    expect((await auditOf(world.layout)).length).toBe(eventsBefore);
  });

  it("remembers a cancel for a dispatch still being claimed and applies it when it is taken", async () => {
    const running = await startDaemon();
    // A claim under way: the file is in claimed/ under a private name, not yet read.
    const claim = join(world.layout.dispatch.claimed, ".claim-1-000000000000");
    await writeFile(claim, "{}");
    expect(await running.requestCancel("dispatch-later", "before it was taken")).toEqual({
      outcome: "pending",
    });
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-later", "commit later.txt"));
    expect(await waitFor(() => completionOf(world.layout, "dispatch-later"))).toMatchObject({
      status: "cancelled",
    });
  });

  it("audits a cancel of an id nobody knows", async () => {
    const running = await startDaemon();
    expect(await running.requestCancel("dispatch-nobody", "why not")).toEqual({ outcome: "unknown" });
    const event = (await auditOf(world.layout)).find((entry) => entry.dispatch_id === "dispatch-nobody");
    expect(event).toMatchObject({
      event: "rejected",
      reason: "cancel: no queued or running dispatch dispatch-nobody",
    });
  });
});
