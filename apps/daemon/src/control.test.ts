import { chmod, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { requestCancel, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
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

afterEach(async () => {
  await daemon?.stop(0);
  await chmod(world.layout.dispatch.incoming, 0o755).catch(() => undefined);
});

async function startDaemon(settings: Record<string, unknown> = {}): Promise<Daemon> {
  daemon = await daemonWorld.start({}, settings);
  return daemon;
}

describe("a cancel right after submit", () => {
  it("is applied to every dispatch, however soon it follows, and audited", async () => {
    await startDaemon({ max_concurrent: 1 });
    const rounds = 20;
    for (let index = 0; index < rounds; index += 1) {
      const id = `dispatch-quick-${index}`;
      await submitDispatch(world.layout, dispatchFor(world, id, `commit quick-${index}.txt`));
      await requestCancel(world.layout, id);
    }
    for (let index = 0; index < rounds; index += 1) {
      const completion = await waitFor(() => completionOf(world.layout, `dispatch-quick-${index}`));
      // A cancel can reach a run that already started; it never lets one complete.
      expect(completion.status).toBe("cancelled");
    }
    const cancelled = (await auditOf(world.layout)).filter((event) => event.event === "cancelled");
    expect(cancelled).toHaveLength(rounds);
  });

  it("audits a cancel of an id nobody knows", async () => {
    await startDaemon();
    await requestCancel(world.layout, "dispatch-ghost");
    const event = await waitFor(async () =>
      (await auditOf(world.layout)).find((entry) => entry.dispatch_id === "dispatch-ghost"),
    );
    expect(event).toMatchObject({
      event: "rejected",
      reason: "cancel: no queued or running dispatch dispatch-ghost",
    });
  });
});

describe("files that used to stay stuck", () => {
  it("takes a name dropped again right after its previous claim", {
    timeout: loadBudget(30_000),
  }, async () => {
    await startDaemon({ max_concurrent: 4, heartbeat_seconds: 5 });
    const incoming = world.layout.dispatch.incoming;
    for (let index = 0; index < 10; index += 1) {
      await writeFile(
        join(incoming, "again.json"),
        JSON.stringify(dispatchFor(world, `dispatch-again-${index}`, "say hi")),
      );
      await new Promise((done) => setTimeout(done, 30));
    }
    // Each drop is taken (or, overwritten before its claim, was never a file of its own);
    // one the watcher missed is found by the next heartbeat.
    await waitFor(async () => ((await readdir(incoming)).includes("again.json") ? undefined : true), 15_000);
    await daemon?.idle();
    const received = (await auditOf(world.layout)).filter((event) => event.event === "received");
    expect(received.length).toBeGreaterThan(0);
    expect(await readdir(incoming)).not.toContain("again.json");
  });

  it("refuses a folder named like a dispatch, with a reason", async () => {
    await startDaemon();
    await mkdir(join(world.layout.dispatch.incoming, "folder.json"));
    const event = await waitFor(async () =>
      (await auditOf(world.layout)).find((entry) => entry.event === "rejected"),
    );
    expect(event.reason).toBe("file-type: is not a regular file");
    expect(await readdir(world.layout.dispatch.incoming)).not.toContain("folder.json");
  });

  it("audits a file it cannot take from a read-only dispatch/ and takes it once writable", async () => {
    if (process.getuid?.() === 0) return; // root ignores the permission this test relies on
    await startDaemon({ heartbeat_seconds: 5 });
    const incoming = world.layout.dispatch.incoming;
    await writeFile(
      join(incoming, "locked.json"),
      JSON.stringify(dispatchFor(world, "dispatch-locked", "say hi")),
    );
    await chmod(incoming, 0o555);
    const refused = await waitFor(async () =>
      (await auditOf(world.layout)).find(
        (entry) => entry.event === "rejected" && String(entry.reason).startsWith("claim:"),
      ),
    );
    expect(refused.reason).toMatch(/^claim: locked\.json cannot be taken \(EACCES: /);
    await chmod(incoming, 0o755);
    expect(await waitFor(() => completionOf(world.layout, "dispatch-locked"), 15_000)).toMatchObject({
      status: "completed",
    });
    expect(
      JSON.parse(await readFile(world.layout.dispatch.completedJson("dispatch-locked"), "utf8")).status,
    ).toBe("completed");
  }, 30_000);
});
