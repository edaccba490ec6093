import { readFile } from "node:fs/promises";
import { resolveDispatchSettings } from "@gstack/contracts";
import type { CompletionDelivery } from "@gstack/daemon-client";
import { submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "./daemon";
import {
  type DeliveryWorld,
  makeDeliveryWorld,
  SAMPLE_REPORT,
  sampleCompletion,
  sampleDispatch,
  startReceiver,
  type TestReceiver,
} from "./deliver/delivery-test-support";
import { createCompletionDelivery } from "./deliver/outbox-delivery";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  startChildDaemon,
  type TestWorld,
  testDaemon,
  waitFor,
} from "./test-support";

const HOUR = 3600_000;
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A wall clock the test moves; the monotonic clock stays the process's own. */
function movableClock() {
  const clock = { shiftMs: 0, now: () => new Date(Date.now() + clock.shiftMs) };
  return clock;
}

describe("a delivery waiting to retry when the wall clock moves", () => {
  let world: DeliveryWorld;
  beforeEach(async () => {
    world = await makeDeliveryWorld();
    cleanups.push(() => world.cleanup());
  });

  async function setUp(answer: (index: number) => number): Promise<{
    delivery: CompletionDelivery;
    receiver: TestReceiver;
    clock: ReturnType<typeof movableClock>;
  }> {
    const receiver = await startReceiver((_request, index) => ({ status: answer(index) }));
    cleanups.push(() => receiver.close());
    const clock = movableClock();
    const delivery = createCompletionDelivery({
      layout: world.layout,
      settings: resolveDispatchSettings({
        dispatch: { openclaw_callback_url: receiver.url("/gstack/completion") },
      }).settings,
      context: world.context,
      // The default give-up (3 days), with short waits between attempts.
      schedule: { firstDelayMs: 300, maxDelayMs: 600 },
      now: clock.now,
    });
    cleanups.push(() => delivery.stop(2000));
    await delivery.enqueue({
      sessionDir: world.sessionDir("dispatch-clock"),
      dispatch: sampleDispatch("dispatch-clock"),
      completion: sampleCompletion("dispatch-clock"),
      reportMarkdown: SAMPLE_REPORT,
    });
    return { delivery, receiver, clock };
  }

  it("is retried on time after the clock went back an hour", async () => {
    const { receiver, clock } = await setUp((index) => (index === 0 ? 503 : 200));
    await waitFor(() => (receiver.requests.length >= 1 ? true : undefined));
    clock.shiftMs = -HOUR;
    await waitFor(() => (receiver.requests.length >= 2 ? true : undefined), 10_000);
    await waitFor(() => (world.events.some((event) => event.event === "callback_sent") ? true : undefined));
  });

  it("is not given up when the clock jumps four days forward", async () => {
    const { receiver, clock } = await setUp((index) => (index < 3 ? 503 : 200));
    await waitFor(() => (receiver.requests.length >= 1 ? true : undefined));
    clock.shiftMs = 4 * 24 * HOUR;
    await waitFor(
      () => (world.events.some((event) => event.event === "callback_sent") ? true : undefined),
      15_000,
    );
    expect(world.events.filter((event) => event.event === "callback_refused")).toEqual([]);
    expect(receiver.requests).toHaveLength(4);
  });
});

describe("a running dispatch when the wall clock moves", () => {
  let world: TestWorld;
  let daemon: Daemon | undefined;
  beforeEach(async () => {
    world = await makeWorld();
    cleanups.push(async () => {
      await daemon?.stop(0);
      daemon = undefined;
      await world.cleanup();
    });
  });

  it("does not time out after a kill, a clock two hours ahead and a restart", async () => {
    const crashing = startChildDaemon(world);
    await waitFor(() => (crashing.output().includes("daemon ready") ? true : undefined), 30_000);
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-ahead", "sleep 1500"));
    await waitFor(async () =>
      (await auditOf(world.layout)).some((event) => event.event === "spawned") ? true : undefined,
    );
    crashing.child.kill("SIGKILL");
    await crashing.exited;
    const clock = movableClock();
    clock.shiftMs = 2 * HOUR;
    daemon = testDaemon(world, { now: clock.now }, { session_timeout_seconds: 3600 });
    await daemon.start();
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-ahead"), 30_000);
    expect(completion).toMatchObject({ status: "completed" });
  }, 60_000);

  it("notes a jump while it runs in the report, and measures its duration", async () => {
    const clock = movableClock();
    daemon = testDaemon(world, { now: clock.now });
    await daemon.start();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-jump", "sleep 1500"));
    await waitFor(async () =>
      (await auditOf(world.layout)).some((event) => event.event === "spawned") ? true : undefined,
    );
    clock.shiftMs = 2 * HOUR;
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-jump"));
    expect(completion).toMatchObject({ status: "completed" });
    expect(completion.duration).toBeLessThan(600);
    const report = await readFile(world.layout.dispatch.completedReport("dispatch-jump"), "utf8");
    expect(report).toContain("The system clock jumped about 2 hours forward while this dispatch ran");
  });
});
