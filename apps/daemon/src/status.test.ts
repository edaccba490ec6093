import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout, resolveDispatchSettings } from "@gstack/contracts";
import { formatStatus, readStatus } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  freePort,
  makeDeliveryWorld,
  sampleCompletion,
  sampleDispatch,
  startReceiver,
} from "./deliver/delivery-test-support";
import { createCompletionDelivery } from "./deliver/outbox-delivery";
import { waitFor } from "./test-support";

let base: string;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-status-"));
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

async function statusWithHeartbeat(ageSeconds: number, fields: Record<string, unknown> = {}) {
  const layout = gstackLayout(base);
  await mkdir(layout.dispatch.incoming, { recursive: true });
  const now = new Date("2026-11-22T12:00:00Z");
  const heartbeat = {
    ts: new Date(now.getTime() - ageSeconds * 1000).toISOString(),
    active: 0,
    queued: 0,
    pid: process.pid,
    ...fields,
  };
  await writeFile(layout.dispatch.heartbeat, JSON.stringify(heartbeat));
  return readStatus(layout, now);
}

describe("daemon liveness from the heartbeat", () => {
  it("counts a daemon alive until three heartbeat intervals pass", async () => {
    expect((await statusWithHeartbeat(80, { interval_seconds: 30 })).alive).toBe(true);
    expect((await statusWithHeartbeat(100, { interval_seconds: 30 })).alive).toBe(false);
    expect((await statusWithHeartbeat(2 * 3600, { interval_seconds: 3600 })).alive).toBe(true);
  });

  it("assumes the default 30-second interval when the heartbeat does not name one", async () => {
    expect((await statusWithHeartbeat(60)).alive).toBe(true);
    expect((await statusWithHeartbeat(10 * 60)).alive).toBe(false);
  });

  it("counts a fresh heartbeat of a dead process as not alive", async () => {
    expect((await statusWithHeartbeat(1, { pid: 2 ** 22 + 12345 })).alive).toBe(false);
  });

  it("reports no daemon when there is no heartbeat", async () => {
    const layout = gstackLayout(base);
    await mkdir(layout.dispatch.incoming, { recursive: true });
    const status = await readStatus(layout);
    expect(status.alive).toBe(false);
    expect(status.heartbeat).toBeUndefined();
  });
});

describe("delivery state in the status", () => {
  it("shows each endpoint's state and the deliveries that ended without success", async () => {
    const world = await makeDeliveryWorld();
    const refusing = await startReceiver(() => ({ status: 401 }));
    try {
      const port = await freePort();
      const delivery = createCompletionDelivery({
        layout: world.layout,
        settings: resolveDispatchSettings({
          dispatch: {
            clawvisor_url: `http://127.0.0.1:${port}/api`,
            openclaw_hooks_url: refusing.url("/hooks/agent"),
          },
        }).settings,
        context: world.context,
      });
      await delivery.start();
      await delivery.enqueue({
        sessionDir: world.sessionDir("dispatch-s1"),
        dispatch: sampleDispatch("dispatch-s1"),
        completion: sampleCompletion("dispatch-s1"),
        reportMarkdown: "",
      });
      await waitFor(() => world.events.find((event) => event.event === "callback_refused"));
      await delivery.stop(1000);
      const text = formatStatus(await readStatus(world.layout));
      const lines = text.split("\n");
      expect(lines.some((line) => /^delivery: 0 pending, 1 failed \(as of .+\)$/.test(line))).toBe(true);
      expect(
        lines.some((line) =>
          /^ {2}DOWN clawvisor http:\/\/127\.0\.0\.1:\d+\/api: does not answer \(ECONNREFUSED\)/.test(line),
        ),
      ).toBe(true);
      expect(lines).toContain(`  ✗ dispatch-s1 → ${refusing.url("/hooks/agent")}: HTTP 401`);
    } finally {
      await refusing.close();
      await world.cleanup();
    }
  });
});
