import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ApiUnreachableError, apiRequest } from "./client";
import { reachDaemonApi } from "./local-api";

let dir: string;
let server: Server | undefined;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "daemon-client-"));
});

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  await rm(dir, { recursive: true, force: true });
});

/** A real HTTP server on `at` (a socket path, or loopback TCP when undefined) that answers with `answer`. */
async function serve(
  at: string | undefined,
  answer: (method: string, url: string, headers: Record<string, unknown>, body: string) => [number, string],
): Promise<Server> {
  const started = createServer((request, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => {
      body += chunk;
    });
    request.on("end", () => {
      const [status, text] = answer(request.method ?? "", request.url ?? "", request.headers, body);
      response.writeHead(status, { "content-type": "application/json" });
      response.end(text);
    });
  });
  await new Promise<void>((resolve) =>
    at ? started.listen(at, resolve) : started.listen(0, "127.0.0.1", resolve),
  );
  server = started;
  return started;
}

describe("apiRequest", () => {
  it("sends the method, path and JSON body over a Unix socket and parses the JSON answer, whatever its status", async () => {
    const socketPath = join(dir, "api.sock");
    const seen: string[] = [];
    await serve(socketPath, (method, url, headers, body) => {
      seen.push(`${method} ${url} ${String(headers["content-type"])} ${body}`);
      return [409, JSON.stringify({ code: "duplicate", message: "already taken" })];
    });
    const response = await apiRequest({ socketPath }, "POST", "/v1/sessions", { body: '{"a":1}' });
    expect(seen).toEqual(['POST /v1/sessions application/json {"a":1}']);
    expect(response.status).toBe(409);
    expect(response.body).toEqual({ code: "duplicate", message: "already taken" });
  });

  it("keeps an answer that is not JSON as its text", async () => {
    const socketPath = join(dir, "api.sock");
    await serve(socketPath, () => [200, "plain words"]);
    const response = await apiRequest({ socketPath }, "GET", "/health");
    expect(response.body).toBe("plain words");
    expect(response.text).toBe("plain words");
  });

  it("sends the bearer token to a TCP address", async () => {
    const authorizations: unknown[] = [];
    const started = await serve(undefined, (_method, _url, headers) => {
      authorizations.push(headers.authorization);
      return [200, "{}"];
    });
    const { port } = started.address() as AddressInfo;
    await apiRequest({ host: "127.0.0.1", port, token: "secret-token" }, "GET", "/v1/sessions");
    expect(authorizations).toEqual(["Bearer secret-token"]);
  });

  it("rejects with ApiUnreachableError, naming the cause, when nobody listens", async () => {
    const failure = await apiRequest({ socketPath: join(dir, "nobody.sock") }, "GET", "/health").catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(ApiUnreachableError);
    expect((failure as ApiUnreachableError).code).toBe("ENOENT");
  });
});

describe("reachDaemonApi", () => {
  it("is undefined when the state root has no API socket", async () => {
    expect(await reachDaemonApi(gstackLayout(dir))).toBeUndefined();
  });

  it("is undefined when the socket file is left over and nobody answers on it", async () => {
    const layout = gstackLayout(dir);
    await mkdirFor(layout.dispatch.apiSocket);
    await writeFile(layout.dispatch.apiSocket, "");
    expect(await reachDaemonApi(layout)).toBeUndefined();
  });

  it("is the socket when the daemon there answers /health, and undefined when it answers otherwise", async () => {
    const layout = gstackLayout(dir);
    await mkdirFor(layout.dispatch.apiSocket);
    let healthy = true;
    await serve(layout.dispatch.apiSocket, (_method, url) =>
      url === "/health" && healthy ? [200, "{}"] : [503, "{}"],
    );
    expect(await reachDaemonApi(layout)).toEqual({ socketPath: layout.dispatch.apiSocket });
    healthy = false;
    expect(await reachDaemonApi(layout)).toBeUndefined();
  });
});

async function mkdirFor(path: string): Promise<void> {
  await mkdir(join(path, ".."), { recursive: true });
}
