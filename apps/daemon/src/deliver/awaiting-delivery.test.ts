import { rm, stat } from "node:fs/promises";
import { resolveDispatchSettings } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "../test-support";
import {
  type AwaitingDelivery,
  awaitingOutboxPath,
  createAwaitingDelivery,
  readAwaitingOutbox,
} from "./awaiting-delivery";
import { planNotice, recordWait, verifiedNotice } from "./awaiting-delivery-test-support";
import {
  type Answer,
  type DeliveryWorld,
  makeDeliveryWorld,
  type ReceivedRequest,
  startReceiver,
  type TestReceiver,
} from "./delivery-test-support";

let world: DeliveryWorld;
let receiver: TestReceiver | undefined;
let delivery: AwaitingDelivery | undefined;

beforeEach(async () => {
  world = await makeDeliveryWorld();
});

afterEach(async () => {
  await delivery?.stop(1000);
  delivery = undefined;
  await receiver?.close();
  receiver = undefined;
  await world.cleanup();
});

async function start(answer: (request: ReceivedRequest, index: number) => Answer, url?: string) {
  receiver = await startReceiver(answer);
  const settings = resolveDispatchSettings({
    dispatch: { openclaw_callback_url: url ?? receiver.url("/gstack/completion") },
  }).settings;
  delivery = createAwaitingDelivery({
    layout: world.layout,
    settings,
    context: world.context,
    schedule: { firstDelayMs: 30, maxDelayMs: 60, giveUpAfterMs: 3_600_000 },
  });
  return delivery;
}

const posts = () => (receiver?.requests ?? []).filter((request) => request.method === "POST");
const outboxOf = (id: string) => readAwaitingOutbox(world.layout, id);

describe("waiting notices to the plugin's signed route", () => {
  it("posts the round's notice signed like a completion, with its round as idempotency key, once", async () => {
    const id = "dispatch-wait-1";
    const notice = planNotice(id);
    await recordWait(world, notice);
    const awaiting = await start(() => ({ status: 200 }));
    await awaiting.enqueue(notice);
    const outbox = await waitFor(async () => {
      const current = await outboxOf(id);
      return current?.state === "delivered" ? current : undefined;
    });
    expect(outbox).toMatchObject({ round: 1, attempts: 1 });
    expect(posts()).toHaveLength(1);
    const request = posts()[0] as ReceivedRequest;
    expect(request.path).toBe("/gstack/completion");
    expect(request.headers["idempotency-key"]).toBe(`${id}:awaiting:1`);
    expect(verifiedNotice(request)).toEqual(notice);
    expect(() => verifiedNotice(request, "another-secret-0123456789abcdef")).toThrow(/signature refused/);
    expect((await stat(awaitingOutboxPath(world.layout, id))).mode & 0o777).toBe(0o600);
    expect(world.events.map((event) => event.event)).toEqual(["callback_sent"]);
    // Taken up again (a heartbeat's replay, the same round enqueued after a restart): not sent again.
    await awaiting.replay();
    await awaiting.enqueue(notice);
    await awaiting.stop(1000);
    expect(posts()).toHaveLength(1);
  });

  it("retries a receiver that is down on the retry schedule until it takes the notice", async () => {
    const id = "dispatch-wait-2";
    const notice = planNotice(id);
    await recordWait(world, notice);
    const awaiting = await start((_request, index) => (index < 2 ? { status: 503 } : { status: 200 }));
    await awaiting.enqueue(notice);
    const outbox = await waitFor(async () => {
      const current = await outboxOf(id);
      return current?.state === "delivered" ? current : undefined;
    });
    expect(outbox.attempts).toBe(3);
    expect(posts()).toHaveLength(3);
    for (const request of posts()) expect(verifiedNotice(request).round).toBe(1);
    expect(world.events.map((event) => event.event)).toEqual([
      "callback_failed",
      "callback_failed",
      "callback_sent",
    ]);
  });

  it("stops once the wait is over (answered on the daemon's host) and sends that round no more", async () => {
    const id = "dispatch-wait-3";
    const notice = planNotice(id);
    await recordWait(world, notice);
    const awaiting = await start(() => ({ status: 503 }));
    await awaiting.enqueue(notice);
    await waitFor(async () => (((await outboxOf(id))?.attempts ?? 0) >= 1 ? true : undefined));
    // The person answered on the daemon's host: the state no longer waits on round 1.
    await recordWait(world, notice, { status: "queued" });
    const ended = await waitFor(async () => {
      const current = await outboxOf(id);
      return current?.state === "ended" ? current : undefined;
    });
    expect(ended.reason).toContain("no longer waiting");
    const sent = posts().length;
    await awaiting.replay();
    await awaiting.enqueue(notice);
    await awaiting.stop(1000);
    expect(posts()).toHaveLength(sent);
    expect((await outboxOf(id))?.state).toBe("ended");
  });

  it("sends a new round in place of the old one, and ignores an older round enqueued late", async () => {
    const id = "dispatch-wait-4";
    const awaiting = await start(() => ({ status: 200 }));
    await recordWait(world, planNotice(id, 1));
    await awaiting.enqueue(planNotice(id, 1));
    await waitFor(async () => ((await outboxOf(id))?.state === "delivered" ? true : undefined));
    await recordWait(world, planNotice(id, 2));
    await awaiting.enqueue(planNotice(id, 2));
    await waitFor(async () => {
      const current = await outboxOf(id);
      return current?.round === 2 && current.state === "delivered" ? true : undefined;
    });
    await awaiting.enqueue(planNotice(id, 1));
    await awaiting.stop(1000);
    expect(posts().map((request) => verifiedNotice(request).round)).toEqual([1, 2]);
    expect((await outboxOf(id))?.round).toBe(2);
  });

  it("ends on a permanent refusal (an older plugin's 400) and tries no more", async () => {
    const id = "dispatch-wait-5";
    const notice = planNotice(id);
    await recordWait(world, notice);
    const awaiting = await start(() => ({ status: 400, body: '{"ok":false}' }));
    await awaiting.enqueue(notice);
    const failed = await waitFor(async () => {
      const current = await outboxOf(id);
      return current?.state === "failed" ? current : undefined;
    });
    expect(failed.reason).toBe("HTTP 400");
    await awaiting.replay();
    await awaiting.stop(1000);
    expect(posts()).toHaveLength(1);
    expect(world.events.map((event) => event.event)).toEqual(["callback_refused"]);
  });

  it("refuses before sending without a callback secret, naming the file", async () => {
    const id = "dispatch-wait-6";
    const notice = planNotice(id);
    await recordWait(world, notice);
    await rm(world.layout.callbackSecret);
    const awaiting = await start(() => ({ status: 200 }));
    await awaiting.enqueue(notice);
    const failed = await waitFor(async () => {
      const current = await outboxOf(id);
      return current?.state === "failed" ? current : undefined;
    });
    expect(failed.reason).toContain(world.layout.callbackSecret);
    expect(posts()).toHaveLength(0);
  });

  it("does nothing without openclaw_callback_url (the folder is the only way)", async () => {
    const id = "dispatch-wait-7";
    const notice = planNotice(id);
    await recordWait(world, notice);
    delivery = createAwaitingDelivery({
      layout: world.layout,
      settings: resolveDispatchSettings({}).settings,
      context: world.context,
    });
    await delivery.enqueue(notice);
    await delivery.replay();
    expect(await outboxOf(id)).toBeUndefined();
  });

  it("replay takes up a notice in dispatch/awaiting/ that was never recorded for delivery", async () => {
    const id = "dispatch-wait-8";
    const notice = planNotice(id);
    await recordWait(world, notice);
    const awaiting = await start(() => ({ status: 200 }));
    await awaiting.replay();
    await waitFor(async () => ((await outboxOf(id))?.state === "delivered" ? true : undefined));
    expect(posts().map((request) => verifiedNotice(request))).toEqual([notice]);
  });
});
