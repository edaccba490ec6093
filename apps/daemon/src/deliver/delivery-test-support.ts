import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AuditEvent,
  type AuditEventName,
  type Completion,
  type Dispatch,
  type GstackLayout,
  gstackLayout,
} from "@gstack/contracts";
import type { DeliveryContext } from "@gstack/daemon-client";

/** A request a test receiver got. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A real HTTP server on 127.0.0.1 that records what it gets and answers as told. */
export interface TestReceiver {
  port: number;
  url(path?: string): string;
  requests: ReceivedRequest[];
  close(): Promise<void>;
}

export type Answer = { status: number; headers?: Record<string, string>; body?: string };

export async function startReceiver(
  answer: (request: ReceivedRequest, index: number) => Answer,
  port = 0,
): Promise<TestReceiver> {
  const requests: ReceivedRequest[] = [];
  const server: Server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
    incoming.on("end", () => {
      const request = {
        method: incoming.method ?? "",
        path: incoming.url ?? "",
        headers: incoming.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      requests.push(request);
      const reply = answer(request, requests.length - 1);
      outgoing.writeHead(reply.status, { "content-type": "text/plain", ...reply.headers });
      outgoing.end(reply.body ?? "");
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", resolve);
  });
  const actual = (server.address() as AddressInfo).port;
  return {
    port: actual,
    url: (path = "/") => `http://127.0.0.1:${actual}${path}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port nothing listens on (taken, then released). */
export async function freePort(): Promise<number> {
  const receiver = await startReceiver(() => ({ status: 200 }));
  await receiver.close();
  return receiver.port;
}

/** A throw-away state root with secrets in place and an audit collected in memory. */
export interface DeliveryWorld {
  base: string;
  layout: GstackLayout;
  events: Array<{ event: AuditEventName } & Omit<AuditEvent, "ts" | "event">>;
  lines: string[];
  context: DeliveryContext;
  sessionDir(id: string): string;
  cleanup(): Promise<void>;
}

export const CALLBACK_SECRET = "callback-secret-0123456789abcdef";
export const HOOKS_TOKEN = "hooks-token-0123456789abcdef";
export const CLAWVISOR_TOKEN = "clawvisor-token-0123456789abcdef";

export async function makeDeliveryWorld(): Promise<DeliveryWorld> {
  const base = await mkdtemp(join(tmpdir(), "gstack-delivery-"));
  const layout = gstackLayout(join(base, "state"));
  await mkdir(layout.dispatch.sessions, { recursive: true });
  await writeFile(layout.callbackSecret, CALLBACK_SECRET, { mode: 0o600 });
  await writeFile(layout.openclawHooksToken, HOOKS_TOKEN, { mode: 0o600 });
  await writeFile(layout.clawvisorToken, CLAWVISOR_TOKEN, { mode: 0o600 });
  const events: DeliveryWorld["events"] = [];
  const lines: string[] = [];
  return {
    base,
    layout,
    events,
    lines,
    context: {
      audit: async (event, fields) => {
        events.push({ event, ...fields });
      },
      log: (line) => lines.push(line),
    },
    sessionDir: (id) => layout.dispatch.sessionDir(id),
    cleanup: () => rm(base, { recursive: true, force: true }),
  };
}

export const SAMPLE_REPORT = `---
dispatch_id: dispatch-x
---
# Report

## What shipped
- Rate limiting on /login (3 commits)

## Decisions made
- Used a token bucket

## Learnings logged
- none

## Needs human judgment
- Should the limit be per IP or per account?
- The staging key is expired
`;

export function sampleDispatch(id: string, extra: Partial<Dispatch> = {}): Dispatch {
  return {
    id,
    dispatched_by: "wintermute",
    task: "Add rate limiting",
    project: "acme-widget",
    project_dir: "/tmp/acme",
    target_agent: "claude",
    ...extra,
  } as Dispatch;
}

export function sampleCompletion(id: string, extra: Partial<Completion> = {}): Completion {
  return {
    dispatch_id: id,
    status: "completed",
    duration: 312,
    commits: 3,
    commit_shas: ["abc1234def", "bcd2345efa", "cde3456fab"],
    pr: "acme/widget#47",
    project: "acme-widget",
    agent: "claude",
    ...extra,
  } as Completion;
}
