import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readStatus } from "./status";

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
