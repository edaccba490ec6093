import { readFile, stat } from "node:fs/promises";
import { completionCallbackSchema, resolveDispatchSettings, verifyCallback } from "@gstack/contracts";
import type { CompletionDelivery } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { waitFor } from "../test-support";
import { deliveredMarkerPath, outboxPath, readOutbox } from "./delivery-outbox";
import {
  CALLBACK_SECRET,
  CLAWVISOR_TOKEN,
  type DeliveryWorld,
  freePort,
  HOOKS_TOKEN,
  makeDeliveryWorld,
  type ReceivedRequest,
  SAMPLE_REPORT,
  sampleCompletion,
  sampleDispatch,
  startReceiver,
  type TestReceiver,
} from "./delivery-test-support";
import { type CompletionDeliveryOptions, createCompletionDelivery } from "./outbox-delivery";

function settingsOf(values: Record<string, unknown>) {
  return resolveDispatchSettings({ dispatch: values }).settings;
}

const FAST = { firstDelayMs: 40, maxDelayMs: 120, giveUpAfterMs: 60_000 };

let world: DeliveryWorld;
const cleanups: Array<() => Promise<void>> = [];

beforeEach(async () => {
  world = await makeDeliveryWorld();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await world.cleanup();
});

function deliveryWith(
  settings: Record<string, unknown>,
  extra: Partial<CompletionDeliveryOptions> = {},
): CompletionDelivery {
  const delivery = createCompletionDelivery({
    layout: world.layout,
    settings: settingsOf(settings),
    context: world.context,
    schedule: FAST,
    ...extra,
  });
  cleanups.push(() => delivery.stop(2000));
  return delivery;
}

async function receiver(
  answer: (request: ReceivedRequest, index: number) => { status: number; headers?: Record<string, string> },
  port?: number,
): Promise<TestReceiver> {
  const server = await startReceiver(answer, port);
  cleanups.push(() => server.close());
  return server;
}

async function enqueue(delivery: CompletionDelivery, id: string, dispatchExtra = {}) {
  await delivery.enqueue({
    sessionDir: world.sessionDir(id),
    dispatch: sampleDispatch(id, dispatchExtra),
    completion: sampleCompletion(id),
    reportMarkdown: SAMPLE_REPORT,
  });
}

describe("createCompletionDelivery", () => {
  it("delivers once, with one Idempotency-Key, to a receiver that is down, then fails, then answers", async () => {
    const port = await freePort();
    const delivery = deliveryWith({ openclaw_callback_url: `http://127.0.0.1:${port}/gstack/completion` });
    await enqueue(delivery, "dispatch-down-then-up");
    // The first attempt finds nothing listening: a transient failure, kept in the outbox.
    await waitFor(() => world.events.find((event) => event.event === "callback_failed"));
    expect((await readOutbox(world.sessionDir("dispatch-down-then-up")))?.targets[0]?.state).toBe("pending");
    expect(delivery.status().pending).toBe(1);
    const server = await receiver((_, index) => ({ status: index === 0 ? 500 : 200 }), port);
    await waitFor(() => world.events.find((event) => event.event === "callback_sent"));
    await delivery.replay();
    await delivery.settled();
    expect(server.requests).toHaveLength(2);
    expect(server.requests.map((request) => request.headers["idempotency-key"])).toEqual([
      "dispatch-down-then-up",
      "dispatch-down-then-up",
    ]);
    // The body is the shared completion-callback, signed with the callback secret.
    const last = server.requests[1] as ReceivedRequest;
    const check = verifyCallback({
      body: last.body,
      timestamp: String(last.headers["x-gstack-timestamp"]),
      signature: String(last.headers["x-gstack-signature"]),
      secret: CALLBACK_SECRET,
    });
    expect(check.ok).toBe(true);
    const body = completionCallbackSchema.parse(JSON.parse(last.body));
    expect(body.needs_judgment).toEqual([
      "Should the limit be per IP or per account?",
      "The staging key is expired",
    ]);
    expect(body.summary).toContain("Rate limiting on /login");
    expect(last.headers.authorization).toBeUndefined();
    const outbox = await readOutbox(world.sessionDir("dispatch-down-then-up"));
    // Every attempt counted: the refused connections (however many the timing allowed), the 500, the 200.
    const refusedConnections = world.events.filter(
      (event) => event.event === "callback_failed" && event.reason === "ECONNREFUSED",
    ).length;
    expect(refusedConnections).toBeGreaterThanOrEqual(1);
    expect(outbox?.targets[0]).toMatchObject({ state: "delivered", attempts: refusedConnections + 2 });
    await stat(deliveredMarkerPath(world.sessionDir("dispatch-down-then-up")));
    expect(delivery.status()).toMatchObject({ pending: 0, failed: [] });
  });

  for (const status of [400, 401, 404, 405, 413]) {
    it(`ends delivery after one attempt when the receiver answers ${status}`, async () => {
      const server = await receiver(() => ({ status }));
      const delivery = deliveryWith({ openclaw_hooks_url: server.url("/hooks/agent") });
      await enqueue(delivery, `dispatch-refused-${status}`);
      const refused = await waitFor(() => world.events.find((event) => event.event === "callback_refused"));
      expect(refused.reason).toBe(`HTTP ${status}`);
      await delivery.replay();
      await delivery.settled();
      expect(server.requests).toHaveLength(1);
      expect(delivery.status().failed).toEqual([
        {
          dispatch_id: `dispatch-refused-${status}`,
          url: server.url("/hooks/agent"),
          reason: `HTTP ${status}`,
        },
      ]);
      const outbox = await readOutbox(world.sessionDir(`dispatch-refused-${status}`));
      expect(outbox?.targets[0]).toMatchObject({
        state: "failed",
        attempts: 1,
        failed_reason: `HTTP ${status}`,
      });
      const written = JSON.parse(await readFile(world.layout.dispatch.deliveryStatus, "utf8"));
      expect(written.failed[0].reason).toBe(`HTTP ${status}`);
    });
  }

  it("backs off on 429 and 503, honouring Retry-After up to the cap, and persists the next attempt", async () => {
    const server = await receiver((_, index) =>
      index === 0
        ? { status: 429, headers: { "retry-after": "3600" } }
        : index === 1
          ? { status: 503 }
          : { status: 200 },
    );
    const delivery = deliveryWith({ openclaw_hooks_url: server.url("/hooks/wake") });
    await enqueue(delivery, "dispatch-busy");
    const first = await waitFor(() => world.events.find((event) => event.event === "callback_failed"));
    const next = Date.parse(String((first.detail as Record<string, unknown>).next_attempt_at));
    // Retry-After asked for an hour; the cap (120 ms here) wins.
    expect(next - Date.now()).toBeLessThanOrEqual(FAST.maxDelayMs);
    await waitFor(() => world.events.find((event) => event.event === "callback_sent"));
    expect(server.requests.map((request) => JSON.parse(request.body).mode)).toEqual(["now", "now", "now"]);
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${HOOKS_TOKEN}`);
  });

  it("is idempotent: a second enqueue, or one after delivery, sends nothing more", async () => {
    const server = await receiver(() => ({ status: 200 }));
    const delivery = deliveryWith({ openclaw_callback_url: server.url("/cb") });
    await Promise.all([enqueue(delivery, "dispatch-twice"), enqueue(delivery, "dispatch-twice")]);
    await waitFor(() => world.events.find((event) => event.event === "callback_sent"));
    await delivery.settled();
    await enqueue(delivery, "dispatch-twice");
    const again = deliveryWith({ openclaw_callback_url: server.url("/cb") });
    await enqueue(again, "dispatch-twice");
    await again.replay();
    await Promise.all([delivery.settled(), again.settled()]);
    expect(server.requests).toHaveLength(1);
  });

  it("keeps an existing outbox on a re-enqueue instead of resetting its schedule", async () => {
    const server = await receiver(() => ({ status: 503 }));
    const delivery = deliveryWith(
      { openclaw_callback_url: server.url("/cb") },
      { schedule: { firstDelayMs: 60_000, maxDelayMs: 60_000, giveUpAfterMs: 3_600_000 } },
    );
    await enqueue(delivery, "dispatch-kept");
    await waitFor(() => world.events.find((event) => event.event === "callback_failed"));
    const before = await readFile(outboxPath(world.sessionDir("dispatch-kept")), "utf8");
    await enqueue(delivery, "dispatch-kept");
    await delivery.settled();
    expect(await readFile(outboxPath(world.sessionDir("dispatch-kept")), "utf8")).toBe(before);
    expect(server.requests).toHaveLength(1);
  });

  it("start resolves for an unreachable endpoint, reports it and its state on disk", async () => {
    const port = await freePort();
    const hooks = await receiver(() => ({ status: 401 }));
    const delivery = deliveryWith({
      clawvisor_url: `http://127.0.0.1:${port}/api`,
      openclaw_hooks_url: hooks.url("/hooks/agent"),
    });
    const checks = await delivery.start();
    expect(checks).toHaveLength(2);
    expect(checks[0]).toMatchObject({ kind: "clawvisor", reachable: false });
    expect(checks[0]?.detail).toMatch(/does not answer \(ECONNREFUSED\)/);
    expect(checks[1]).toMatchObject({
      kind: "openclaw-hooks",
      reachable: true,
      detail: "answers (HTTP 401 to an unauthenticated probe)",
    });
    expect(hooks.requests[0]?.headers.authorization).toBeUndefined();
    const unreachable = world.events.filter((event) => event.event === "endpoint_checked");
    expect(unreachable.map((event) => (event.detail as Record<string, unknown>).reachable)).toEqual([
      false,
      true,
    ]);
    const written = JSON.parse(await readFile(world.layout.dispatch.deliveryStatus, "utf8"));
    expect(written.endpoints[0]).toMatchObject({ kind: "clawvisor", reachable: false });
  });

  it("reports a route that does not take POSTs (404/405) as not reachable", async () => {
    const server = await receiver((request) => ({ status: request.path === "/missing" ? 404 : 405 }));
    const delivery = deliveryWith({
      openclaw_hooks_url: server.url("/missing"),
      openclaw_callback_url: server.url("/get-only"),
    });
    const checks = await delivery.start();
    expect(checks.map((check) => check.reachable)).toEqual([false, false]);
    expect(checks[1]?.detail).toContain("HTTP 405");
  });

  it("never sends the Clawvisor token to another origin, by callback_url or by redirect", async () => {
    const foreign = await receiver(() => ({ status: 200 }));
    const clawvisor = await receiver((request) =>
      request.path === "/api/tasks/redirect/complete"
        ? { status: 307, headers: { location: foreign.url("/steal") } }
        : { status: 200 },
    );
    const delivery = deliveryWith({ clawvisor_url: clawvisor.url("/api") });
    expect(delivery.checkCallbackUrl(clawvisor.url("/api/tasks/t1/complete"))).toEqual({ ok: true });
    const refused = delivery.checkCallbackUrl(foreign.url("/api/tasks/t1/complete"));
    expect(refused.ok).toBe(false);
    expect(refused.ok ? "" : refused.reason).toContain("is not the configured Clawvisor origin");
    // A dispatch that names a foreign URL anyway ends as refused, without a request.
    await enqueue(delivery, "dispatch-foreign", { callback_url: foreign.url("/api/tasks/t1/complete") });
    await enqueue(delivery, "dispatch-redirect", {
      callback_url: clawvisor.url("/api/tasks/redirect/complete"),
    });
    await enqueue(delivery, "dispatch-good", { callback_url: clawvisor.url("/api/tasks/t1/complete") });
    await waitFor(() =>
      world.events.filter((event) => event.event === "callback_refused").length === 2 &&
      world.events.some((event) => event.event === "callback_sent")
        ? true
        : undefined,
    );
    expect(foreign.requests).toHaveLength(0);
    const reasons = delivery.status().failed.map((failure) => failure.reason);
    expect(reasons.some((reason) => reason.includes("redirects are not followed"))).toBe(true);
    const good = clawvisor.requests.find((request) => request.path === "/api/tasks/t1/complete");
    expect(good?.headers.authorization).toBe(`Bearer ${CLAWVISOR_TOKEN}`);
    expect(JSON.parse(good?.body ?? "{}")).toMatchObject({
      dispatch_id: "dispatch-good",
      status: "completed",
    });
  });

  it("refuses plain http to a host that is not loopback, and a secret file others can read", async () => {
    const delivery = deliveryWith({ clawvisor_url: "http://clawvisor.example/api" });
    const check = delivery.checkCallbackUrl("http://clawvisor.example/api/tasks/t1/complete");
    expect(check.ok ? "" : check.reason).toContain("plain http");
    const { chmod } = await import("node:fs/promises");
    await chmod(world.layout.callbackSecret, 0o644);
    const server = await receiver(() => ({ status: 200 }));
    const signed = deliveryWith({ openclaw_callback_url: server.url("/cb") });
    await enqueue(signed, "dispatch-loose-secret");
    const refused = await waitFor(() => world.events.find((event) => event.event === "callback_refused"));
    expect(refused.reason).toContain("chmod 600");
    expect(server.requests).toHaveLength(0);
  });

  it("sends nothing in local-only mode without an OpenClaw receiver, and still delivers to one that is configured", async () => {
    const server = await receiver(() => ({ status: 200 }));
    const none = deliveryWith({});
    await enqueue(none, "dispatch-local", { callback_url: server.url("/cb") });
    await stat(outboxPath(world.sessionDir("dispatch-local"))).then(
      () => expect.unreachable("no outbox without receivers"),
      () => undefined,
    );
    const hooks = deliveryWith({ openclaw_hooks_url: server.url("/hooks/agent") });
    await enqueue(hooks, "dispatch-local-hooks", { callback_url: server.url("/cb") });
    await waitFor(() => world.events.find((event) => event.event === "callback_sent"));
    expect(server.requests.map((request) => request.path)).toEqual(["/hooks/agent"]);
    const message = JSON.parse(server.requests[0]?.body ?? "{}").message as string;
    expect(message).toContain("dispatch-local-hooks completed");
    expect(message).toContain("PR: acme/widget#47");
    expect(message).toContain("- The staging key is expired");
  });
});
