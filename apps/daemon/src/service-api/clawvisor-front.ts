import { readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import {
  type CallbackError,
  type GstackLayout,
  parseValue,
  SERVICE_API_VERSION,
  type ServiceHealth,
} from "@gstack/contracts";
import { claimSocketPath } from "./server";

/** How long a caller is told to wait before trying again while the daemon is down. */
const RETRY_AFTER_SECONDS = 60;

export interface ClawvisorFrontOptions {
  layout: GstackLayout;
  /** Where clawvisor-local wants the service: `CLAWVISOR_SOCKET`. */
  socketPath: string;
  log(line: string): void;
}

/**
 * The `gstack-coding` service as clawvisor-local starts it: a small HTTP server on
 * `CLAWVISOR_SOCKET` that passes every request to the daemon's own socket unchanged and its
 * answer back unchanged. It runs whether or not the daemon does, so its health check passes
 * and a caller gets `daemon_crashed` (with when the daemon was last seen) instead of a
 * service that failed to start.
 */
export async function startClawvisorFront(options: ClawvisorFrontOptions): Promise<Server> {
  await claimSocketPath(options.socketPath);
  const server = createServer((incoming, outgoing) => {
    forward(options, incoming, outgoing);
  });
  server.headersTimeout = 10_000;
  server.on("clientError", (_error, socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.socketPath, () => {
      server.off("error", reject);
      resolve();
    });
  });
  return server;
}

/** Request bodies the front passes on; the daemon's own limit is below this. */
const MAX_FORWARDED_BODY = 4 * 1024 * 1024;

function forward(options: ClawvisorFrontOptions, incoming: IncomingMessage, outgoing: ServerResponse): void {
  const chunks: Buffer[] = [];
  let size = 0;
  incoming.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size <= MAX_FORWARDED_BODY) chunks.push(chunk);
  });
  incoming.on("error", () => outgoing.destroy());
  incoming.on("end", () => {
    if (size > MAX_FORWARDED_BODY) {
      reply(outgoing, 413, {
        error: "too_large",
        message: `the request body is ${size} bytes, over the ${MAX_FORWARDED_BODY}-byte limit`,
      });
      return;
    }
    // The whole body is sent at once, so the request is complete before the daemon answers.
    const body = Buffer.concat(chunks);
    const headers = { ...incoming.headers, "content-length": String(body.length) };
    delete headers["transfer-encoding"];
    const upstream = request(
      {
        socketPath: options.layout.dispatch.apiSocket,
        method: incoming.method,
        path: incoming.url,
        headers,
        // A fresh connection for each request, closed after the answer.
        agent: false,
        timeout: 120_000,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
      },
    );
    let answered = false;
    upstream.on("response", () => {
      answered = true;
    });
    upstream.on("timeout", () =>
      upstream.destroy(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" })),
    );
    upstream.on("error", (error: NodeJS.ErrnoException) => {
      if (answered || outgoing.headersSent) {
        if (!outgoing.writableEnded) outgoing.destroy();
        return;
      }
      void daemonDown(options, incoming, error).then(({ status, body: down }) =>
        reply(outgoing, status, down),
      );
    });
    upstream.end(body);
  });
}

function reply(outgoing: ServerResponse, status: number, body: unknown): void {
  const text = `${JSON.stringify(body)}\n`;
  outgoing.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    ...(status === 503 ? { "retry-after": String(RETRY_AFTER_SECONDS) } : {}),
  });
  outgoing.end(text);
}

/** The answer while the daemon cannot be reached: health says so (200), every action 503. */
async function daemonDown(
  options: ClawvisorFrontOptions,
  incoming: IncomingMessage,
  error: NodeJS.ErrnoException,
): Promise<{ status: number; body: ServiceHealth | CallbackError }> {
  const message = await whyDown(options.layout, error);
  options.log(`daemon unreachable (${error.code ?? error.message}): ${message}`);
  const path = new URL(incoming.url ?? "/", "http://front.invalid").pathname;
  if (path === "/health") {
    return {
      status: 200,
      body: parseValue("service-health", {
        ok: false,
        daemon: "not_running",
        api_version: SERVICE_API_VERSION,
        error: "daemon_crashed",
        message,
      }),
    };
  }
  return {
    status: 503,
    body: parseValue("callback-error", {
      error: "daemon_crashed",
      message,
      retry_after_seconds: RETRY_AFTER_SECONDS,
    }),
  };
}

async function whyDown(layout: GstackLayout, error: NodeJS.ErrnoException): Promise<string> {
  let heartbeat: { ts?: string; interval_seconds?: number; api?: { error?: string } } | undefined;
  try {
    heartbeat = JSON.parse(await readFile(layout.dispatch.heartbeat, "utf8")) as typeof heartbeat;
  } catch {}
  const last = heartbeat?.ts;
  const fresh =
    last !== undefined &&
    Date.now() - new Date(last).getTime() < 3 * (heartbeat?.interval_seconds ?? 30) * 1000;
  if (fresh && heartbeat?.api?.error) {
    return `the dispatch daemon runs but its service API could not start: ${heartbeat.api.error}`;
  }
  const since = last ? `it was last seen at ${last}` : "it has not run here yet";
  if (error.code === "ETIMEDOUT") return `the dispatch daemon did not answer in time; ${since}`;
  return `the dispatch daemon is not running (${since}); start it with 'gstack-dispatch install' or 'gstack-dispatch run'`;
}
