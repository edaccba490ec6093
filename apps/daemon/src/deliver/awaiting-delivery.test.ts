import { mkdir, rm, stat } from "node:fs/promises";
import {
  type AwaitingNotice,
  CALLBACK_SIGNATURE_HEADER,
  CALLBACK_TIMESTAMP_HEADER,
  checkValue,
  resolveDispatchSettings,
  verifyCallback,
} from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeAwaitingNotice } from "../await/awaiting";
import { type SessionState, writeState } from "../session-state";
import { waitFor } from "../test-support";
import {
  type AwaitingDelivery,
  awaitingOutboxPath,
  createAwaitingDelivery,
  readAwaitingOutbox,
} from "./awaiting-delivery";
import {
  type Answer,
  CALLBACK_SECRET,
  type DeliveryWorld,
  makeDeliveryWorld,
  type ReceivedRequest,
  startReceiver,
  type TestReceiver,
} from "./delivery-test-support";

/** A notice as the daemon writes it for round `round` of a plan. */
export function planNotice(id: string, round = 1): AwaitingNotice {
  return {
    dispatch_id: id,
    status: "awaiting",
    project: "acme-widget",
    kind: "plan",
    since: "2026-11-23T10:00:00.000Z",
    expires_at: "2099-11-26T10:00:00.000Z",
    round,
    summary: `## Plan (round ${round})\n1. Add plan.txt.`,
    how_to_answer: `gstack-dispatch answer ${id} approve | revise "<what to change>" | reject "<why>"`,
    reply_to: { runtime: "openclaw", session_key: "agent:main:main" },
  };
}

/** The session state and notice of a dispatch that waits on `notice`'s round. */
export async function recordWait(
  world: Pick<DeliveryWorld, "layout">,
  notice: AwaitingNotice,
  change: Partial<SessionState> = {},
): Promise<void> {
  await mkdir(world.layout.dispatch.sessionDir(notice.dispatch_id), { recursive: true });
  await writeState(world.layout, {
    id: notice.dispatch_id,
    project: "acme-widget",
    project_dir: "/tmp/acme",
    agent: "claude",
    status: "awaiting",
    claimed_file: "",
    first_seen: notice.since,
    updated_at: notice.since,
    attempts: 1,
    awaiting: {
      kind: notice.kind,
      since: notice.since,
      expires_at: notice.expires_at,
      round: notice.round,
      summary: notice.summary,
      how_to_answer: notice.how_to_answer,
    },
    ...change,
  } as SessionState);
  await writeAwaitingNotice(world.layout, notice);
}

/** A signed waiting notice a receiver got, checked as the plugin's route checks it. */
export function verifiedNotice(request: ReceivedRequest, secret = CALLBACK_SECRET): AwaitingNotice {
  const header = (name: string) => {
    const value = request.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const check = verifyCallback({
    body: request.body,
    timestamp: header(CALLBACK_TIMESTAMP_HEADER),
    signature: header(CALLBACK_SIGNATURE_HEADER),
    secret,
  });
  if (!check.ok) throw new Error(`signature refused: ${check.message}`);
  const body = checkValue("awaiting-callback", JSON.parse(request.body), { source: "test" });
  if (!body.ok) throw new Error(`not an awaiting-callback: ${body.error.message}`);
  expect(body.value.notice.dispatch_id).toBe(body.value.dispatch_id);
  return body.value.notice;
}

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
