import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { readDeliveryStatus, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../daemon";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";
import { readOutbox } from "./delivery-outbox";

interface Received {
  path: string;
  authorization?: string;
  idempotencyKey?: string;
  body: Record<string, unknown>;
}

let world: TestWorld;
let server: Server | undefined;
let daemon: Daemon | undefined;

beforeEach(async () => {
  world = await makeWorld();
  await mkdir(world.root, { recursive: true });
  await writeFile(world.layout.clawvisorToken, "clawvisor-test-token-0123456789", { mode: 0o600 });
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
  await world.cleanup();
});

/** A real HTTP endpoint that fails the first `failures` completion POSTs with a 503. */
async function listen(failures: number, port = 0): Promise<{ url: string; received: Received[] }> {
  const received: Received[] = [];
  let failed = 0;
  const listening = createServer((request: IncomingMessage, response) => {
    let text = "";
    request.on("data", (chunk: Buffer) => {
      text += chunk.toString();
    });
    request.on("end", () => {
      if (request.method !== "POST") {
        response.writeHead(200).end();
        return;
      }
      if (failed < failures) {
        failed += 1;
        response.writeHead(503).end();
        return;
      }
      received.push({
        path: request.url ?? "",
        authorization: request.headers.authorization,
        idempotencyKey: request.headers["idempotency-key"] as string | undefined,
        body: JSON.parse(text) as Record<string, unknown>,
      });
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  server = listening;
  await new Promise<void>((resolve) => listening.listen(port, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(listening.address() as AddressInfo).port}`, received };
}

function startDaemon(clawvisorUrl: string) {
  daemon = testDaemon(
    world,
    { deliverySchedule: { firstDelayMs: 50, maxDelayMs: 100 } },
    { clawvisor_url: clawvisorUrl },
  );
  return daemon.start();
}

describe("the daemon delivers completions", () => {
  it("posts the completion with the bearer token, retrying failed attempts", async () => {
    const endpoint = await listen(2);
    await startDaemon(endpoint.url);
    await submitDispatch(world.layout, {
      ...dispatchFor(world, "dispatch-callback", "commit c.txt"),
      callback_url: `${endpoint.url}/api/tasks/task_1/complete`,
    });
    const [delivered] = await waitFor(() => (endpoint.received.length > 0 ? endpoint.received : undefined));
    expect(delivered).toMatchObject({
      path: "/api/tasks/task_1/complete",
      authorization: "Bearer clawvisor-test-token-0123456789",
      idempotencyKey: "dispatch-callback",
      body: { dispatch_id: "dispatch-callback", status: "completed", commits: 1 },
    });
    const events = await waitFor(async () => {
      const found = (await auditOf(world.layout)).filter(
        (event) => event.event === "callback_failed" || event.event === "callback_sent",
      );
      return found.some((event) => event.event === "callback_sent") ? found : undefined;
    });
    expect(events.map((event) => event.event)).toEqual([
      "callback_failed",
      "callback_failed",
      "callback_sent",
    ]);
    expect(endpoint.received).toHaveLength(1);
  });

  it("refuses a dispatch whose callback_url would carry the token to another origin", async () => {
    const endpoint = await listen(0);
    await startDaemon(endpoint.url);
    await submitDispatch(world.layout, {
      ...dispatchFor(world, "dispatch-elsewhere", "commit e.txt"),
      callback_url: "https://collector.example/steal",
    });
    const refusal = await waitFor(async () =>
      (await auditOf(world.layout)).find(
        (event) => event.event === "rejected" && event.dispatch_id === "dispatch-elsewhere",
      ),
    );
    expect(String(refusal.reason)).toMatch(/callback/);
    expect(endpoint.received).toHaveLength(0);
  });

  it("keeps an undelivered completion in the outbox and delivers it after a restart", async () => {
    const endpoint = await listen(1000);
    await startDaemon(endpoint.url);
    await submitDispatch(world.layout, {
      ...dispatchFor(world, "dispatch-outbox", "commit o.txt"),
      callback_url: `${endpoint.url}/complete`,
    });
    await waitFor(() => completionOf(world.layout, "dispatch-outbox"));
    await waitFor(async () =>
      (await auditOf(world.layout)).filter((event) => event.event === "callback_failed").length >= 2
        ? true
        : undefined,
    );
    await daemon?.stop(0);
    daemon = undefined;
    const sessionDir = world.layout.dispatch.sessionDir("dispatch-outbox");
    expect(await readOutbox(sessionDir)).toMatchObject({ dispatch_id: "dispatch-outbox" });
    const port = Number(new URL(endpoint.url).port);
    await new Promise((resolve) => server?.close(resolve));
    const healthy = await listen(0, port);
    await startDaemon(healthy.url);
    const [delivered] = await waitFor(() => (healthy.received.length > 0 ? healthy.received : undefined));
    expect(delivered?.body).toMatchObject({ dispatch_id: "dispatch-outbox", status: "completed" });
    expect(delivered?.idempotencyKey).toBe("dispatch-outbox");
  });

  it("starts although Clawvisor does not answer, reports it down, and delivers once it is back", async () => {
    const probe = await listen(0);
    const port = Number(new URL(probe.url).port);
    await new Promise((resolve) => server?.close(resolve));
    server = undefined;
    await startDaemon(probe.url);
    const down = await waitFor(async () => {
      const status = await readDeliveryStatus(world.layout);
      return status?.endpoints.find((endpoint) => endpoint.kind === "clawvisor");
    });
    expect(down.reachable).toBe(false);
    await submitDispatch(world.layout, {
      ...dispatchFor(world, "dispatch-later", "commit l.txt"),
      callback_url: `${probe.url}/complete`,
    });
    await waitFor(() => completionOf(world.layout, "dispatch-later"));
    const back = await listen(0, port);
    const [delivered] = await waitFor(() => (back.received.length > 0 ? back.received : undefined));
    expect(delivered?.body).toMatchObject({ dispatch_id: "dispatch-later", status: "completed" });
  });
});
