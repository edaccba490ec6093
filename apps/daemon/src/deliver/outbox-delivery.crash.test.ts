import { type ChildProcess, spawn } from "node:child_process";
import { readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { resolveDispatchSettings } from "@gstack/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { auditLog } from "../daemon-context";
import { bundledModule, waitFor } from "../test-support";
import { deliveredMarkerPath, readOutbox } from "./delivery-outbox";
import {
  type DeliveryWorld,
  freePort,
  makeDeliveryWorld,
  SAMPLE_REPORT,
  sampleCompletion,
  sampleDispatch,
  startReceiver,
  type TestReceiver,
} from "./delivery-test-support";
import { createCompletionDelivery } from "./outbox-delivery";

const here = new URL(".", import.meta.url);

/** A separate process that creates the delivery, enqueues one completion and then waits forever. */
function enqueueScript(root: string, url: string, id: string): string {
  const source = (name: string) => JSON.stringify(bundledModule(`src/deliver/${name}`));
  return `
import { gstackLayout, resolveDispatchSettings } from "@gstack/contracts";
import { createCompletionDelivery } from ${source("outbox-delivery.ts")};
import { sampleCompletion, sampleDispatch, SAMPLE_REPORT } from ${source("delivery-test-support.ts")};
const layout = gstackLayout(${JSON.stringify(root)});
const delivery = createCompletionDelivery({
  layout,
  settings: resolveDispatchSettings({ dispatch: { openclaw_callback_url: ${JSON.stringify(url)} } }).settings,
  context: { audit: async () => {}, log: () => {} },
  schedule: { firstDelayMs: 60_000, maxDelayMs: 60_000, giveUpAfterMs: 3_600_000 },
});
await delivery.enqueue({
  sessionDir: layout.dispatch.sessionDir(${JSON.stringify(id)}),
  dispatch: sampleDispatch(${JSON.stringify(id)}),
  completion: sampleCompletion(${JSON.stringify(id)}),
  reportMarkdown: SAMPLE_REPORT,
});
process.stdout.write("enqueued\\n");
setInterval(() => {}, 1000);
`;
}

let world: DeliveryWorld;
let child: ChildProcess | undefined;
let server: TestReceiver | undefined;

afterEach(async () => {
  child?.kill("SIGKILL");
  await server?.close();
  await world.cleanup();
});

describe("completion delivery across a kill -9", () => {
  it("a new process replays the pending outbox and delivers once, continuing the attempt count", async () => {
    world = await makeDeliveryWorld();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/gstack/completion`;
    const id = "dispatch-crash-1";
    const script = join(here.pathname, `.crash-fixture-${process.pid}.mjs`);
    await writeFile(script, enqueueScript(world.layout.root, url, id));
    try {
      child = spawn(process.execPath, ["--enable-source-maps", script], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      let output = "";
      child.stdout?.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      await waitFor(() => (output.includes("enqueued") ? true : undefined), 30_000);
      // The first attempt met a closed port; the outbox says when to try next.
      const pending = await waitFor(async () => {
        const outbox = await readOutbox(world.sessionDir(id));
        return outbox && outbox.targets[0]?.attempts === 1 ? outbox : undefined;
      });
      expect(pending.targets[0]).toMatchObject({ state: "pending" });
      expect(Date.parse(pending.targets[0]?.next_attempt_at ?? "")).toBeGreaterThan(Date.now() + 30_000);
      const exited = new Promise((resolve) => child?.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    } finally {
      const { rm } = await import("node:fs/promises");
      await rm(script, { force: true });
    }
    server = await startReceiver(() => ({ status: 200 }), port);
    const events: string[] = [];
    const settings = resolveDispatchSettings({ dispatch: { openclaw_callback_url: url } }).settings;
    // A restarted daemon keeps the persisted schedule: the next attempt is a minute away, so
    // a replay right now sends nothing ...
    const early = createCompletionDelivery({
      layout: world.layout,
      settings,
      context: { audit: async () => {}, log: () => {} },
    });
    await early.replay();
    await early.settled();
    await early.stop(1000);
    expect(server.requests).toHaveLength(0);
    // ... while one that starts when the attempt is due delivers it ...
    const restarted = createCompletionDelivery({
      layout: world.layout,
      settings,
      context: { audit: async (event) => void events.push(event), log: () => {} },
      schedule: { firstDelayMs: 50, maxDelayMs: 50, giveUpAfterMs: 3_600_000 },
      now: () => new Date(Date.now() + 120_000),
    });
    await restarted.replay();
    await waitFor(() => (events.includes("callback_sent") ? true : undefined));
    await restarted.replay();
    await restarted.settled();
    await restarted.stop(1000);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.headers["idempotency-key"]).toBe(id);
    expect((await readOutbox(world.sessionDir(id)))?.targets[0]).toMatchObject({
      state: "delivered",
      attempts: 2,
    });
    // ... and the same completion enqueued again after the crash is not sent twice.
    await restarted.enqueue({
      sessionDir: world.sessionDir(id),
      dispatch: sampleDispatch(id),
      completion: sampleCompletion(id),
      reportMarkdown: SAMPLE_REPORT,
    });
    expect(server.requests).toHaveLength(1);
  });
});

describe("a kill between a delivery's record and its audit event", () => {
  it("the next process writes the missing callback_sent once and sends nothing again", async () => {
    world = await makeDeliveryWorld();
    server = await startReceiver(() => ({ status: 200 }));
    const url = server.url("/gstack/completion");
    const id = "dispatch-cut-audit";
    const settings = resolveDispatchSettings({ dispatch: { openclaw_callback_url: url } }).settings;
    const context = {
      audit: auditLog(
        world.layout,
        () => new Date(),
        () => {},
      ),
      log: () => {},
    };
    const sent = async () =>
      (await readFile(world.layout.dispatch.audit, "utf8").catch(() => ""))
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { event: string; dispatch_id?: string; detail?: unknown })
        .filter((event) => event.event === "callback_sent" && event.dispatch_id === id);
    const first = createCompletionDelivery({ layout: world.layout, settings, context });
    await first.enqueue({
      sessionDir: world.sessionDir(id),
      dispatch: sampleDispatch(id),
      completion: sampleCompletion(id),
      reportMarkdown: SAMPLE_REPORT,
    });
    await first.settled();
    await first.stop(1000);
    expect(await sent()).toHaveLength(1);
    // What a kill right after the outbox said `delivered` leaves: no event, no finished marker.
    const audit = await readFile(world.layout.dispatch.audit, "utf8");
    await writeFile(
      world.layout.dispatch.audit,
      audit
        .split("\n")
        .filter((line) => !line.includes('"callback_sent"'))
        .join("\n"),
    );
    await rm(deliveredMarkerPath(world.sessionDir(id)));
    expect((await readOutbox(world.sessionDir(id)))?.targets[0]?.state).toBe("delivered");
    expect(await sent()).toHaveLength(0);
    for (let restart = 0; restart < 2; restart += 1) {
      const next = createCompletionDelivery({ layout: world.layout, settings, context });
      await next.replay();
      await next.settled();
      await next.stop(1000);
    }
    expect((await sent()).map((event) => event.detail)).toEqual([
      { url, receiver: "gstack-receiver", attempts: 1, written: "after a restart" },
    ]);
    expect(server.requests).toHaveLength(1);
  });
});
