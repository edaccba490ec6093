import { execFileSync } from "node:child_process";
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { type DispatchInput, parseValue, writeDispatchFile } from "@gstack/contracts";
import { type ApiTarget, apiRequest } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it, onTestFailed } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import type { Daemon, DaemonOptions } from "../daemon";
import { useDaemonWorld } from "../daemon-test-world";
import { completionOf, dispatchFor, type TestWorld, testDaemon, waitFor } from "../test-support";

const daemonWorld = useDaemonWorld();
let world: TestWorld;
let daemon: Daemon | undefined;

beforeEach(() => {
  world = daemonWorld.world;
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
});

async function startDaemon(options: Partial<DaemonOptions> = {}, settings: Record<string, unknown> = {}) {
  // The daemon's log is printed when the test fails: it says where a dispatch got stuck.
  const lines: string[] = [];
  onTestFailed(() => console.log(`daemon log:\n${lines.join("\n")}`));
  const log = options.log;
  daemon = testDaemon(
    world,
    {
      retryDelayMs: { rateLimit: 20, other: 20 },
      ...options,
      log: (line) => {
        lines.push(line);
        log?.(line);
      },
    },
    settings,
  );
  await daemon.start();
  return daemon;
}

const socket = (): ApiTarget => ({ socketPath: world.layout.dispatch.apiSocket });

function spawnBody(dispatch: unknown): string {
  // As a template-built request sends it: the dispatch as JSON text inside the body.
  return JSON.stringify({ dispatch: JSON.stringify(dispatch) });
}

async function spawnOver(target: ApiTarget, dispatch: unknown) {
  return apiRequest(target, "POST", "/v1/sessions", { body: spawnBody(dispatch) });
}

async function completionOver(target: ApiTarget, id: string) {
  return apiRequest(target, "GET", `/v1/completion?dispatch_id=${encodeURIComponent(id)}`);
}

async function terminalSnapshot(target: ApiTarget, id: string) {
  return waitFor(async () => {
    const answer = await completionOver(target, id);
    const body = answer.body as { terminal?: boolean };
    return body.terminal ? answer : undefined;
  });
}

function headOf(repo: string): string {
  return execFileSync("git", ["-C", repo, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
}

describe("the service API on the Unix socket", { timeout: loadBudget(60_000) }, () => {
  it("serves only its user (mode 0600) and says where it listens in the heartbeat", async () => {
    await startDaemon();
    const info = await stat(world.layout.dispatch.apiSocket);
    expect(info.isSocket()).toBe(true);
    expect(info.mode & 0o777).toBe(0o600);
    const heartbeat = JSON.parse(await readFile(world.layout.dispatch.heartbeat, "utf8"));
    expect(heartbeat.api).toEqual({ socket: world.layout.dispatch.apiSocket });
    const health = await apiRequest(socket(), "GET", "/health");
    expect(health.status).toBe(200);
    expect(parseValue("service-health", health.body)).toMatchObject({
      ok: true,
      daemon: "running",
      pid: process.pid,
    });
  });

  it("spawns, answers 'still running' until the end, then the terminal snapshot with the report", async () => {
    await startDaemon();
    const dispatch = dispatchFor(world, "dispatch-api-one", "sleep 600");
    const spawned = await spawnOver(socket(), dispatch);
    expect(spawned.status).toBe(202);
    expect(parseValue("spawn-answer", spawned.body)).toEqual({
      accepted: true,
      dispatch_id: "dispatch-api-one",
      position: 1,
      status: "queued",
    });
    const early = await completionOver(socket(), "dispatch-api-one");
    expect(early.status).toBe(200);
    const snapshot = parseValue("dispatch-snapshot", early.body);
    expect(snapshot.terminal).toBe(false);
    expect(snapshot.report).toBeUndefined();
    expect(["queued", "running"]).toContain(snapshot.status);
    const done = await terminalSnapshot(socket(), "dispatch-api-one");
    const final = parseValue("dispatch-snapshot", done.body);
    expect(final).toMatchObject({ status: "completed", terminal: true, attempt: 1 });
    expect(final.report).toEqual(await completionOf(world.layout, "dispatch-api-one"));
    expect(final.report_markdown).toContain("dispatch-api-one");
    const status = parseValue(
      "dispatch-snapshot",
      (await apiRequest(socket(), "GET", "/v1/status?dispatch_id=dispatch-api-one")).body,
    );
    expect(status).toMatchObject({ status: "completed", terminal: true });
    expect(status.report).toBeUndefined();
  });

  it("shows only this attempt's commits as the run's; an earlier attempt's are under earlier_runs", async () => {
    await startDaemon();
    const before = headOf(world.repo);
    await spawnOver(socket(), dispatchFor(world, "dispatch-api-retried", "commit-then-rate-limit made"));
    const done = parseValue(
      "dispatch-snapshot",
      (await terminalSnapshot(socket(), "dispatch-api-retried")).body,
    );
    const commits = execFileSync(
      "git",
      ["-C", world.repo, "log", "--reverse", "--format=%H %s", `${before}..gstack/dispatch-api-retried`],
      {
        encoding: "utf8",
      },
    )
      .trim()
      .split("\n")
      .map((line) => line.split(" "));
    const first = commits.find(([, , name]) => name === "made-1")?.[0];
    const second = commits.find(([, , name]) => name === "made-2")?.[0];
    expect(first && second).toBeTruthy();
    expect(done).toMatchObject({ status: "completed", attempt: 2 });
    expect(done.run?.commit_shas).toEqual([second]);
    expect(done.run?.artifacts).toContain(`commit:${second?.slice(0, 12)}`);
    expect(done.run?.artifacts).not.toContain(`commit:${first?.slice(0, 12)}`);
    expect(done.earlier_runs).toEqual({ attempts: 1, commit_shas: [first] });
    expect(done.report?.commit_shas).toEqual([first, second]);
  });

  it("lists running and queued sessions with queue depth and max_concurrent", async () => {
    await startDaemon({}, { max_concurrent: 1 });
    await spawnOver(socket(), dispatchFor(world, "dispatch-list-a", "sleep 3000"));
    await spawnOver(socket(), dispatchFor(world, "dispatch-list-b", "sleep 10"));
    await spawnOver(socket(), dispatchFor(world, "dispatch-list-c", "sleep 10"));
    const list = await waitFor(async () => {
      const answer = parseValue("list-sessions", (await apiRequest(socket(), "GET", "/v1/sessions")).body);
      return answer.active === 1 ? answer : undefined;
    });
    expect(list).toMatchObject({ active: 1, max_concurrent: 1, queued: 2 });
    expect(list.sessions.map((session) => session.id)).toEqual(["dispatch-list-a"]);
    expect(list.queue?.map((item) => item.id)).toEqual(["dispatch-list-b", "dispatch-list-c"]);
    const queued = parseValue(
      "dispatch-snapshot",
      (await apiRequest(socket(), "GET", "/v1/status?dispatch_id=dispatch-list-c")).body,
    );
    expect(queued).toMatchObject({ status: "queued", position: 2, terminal: false });
  });

  it("cancels a running dispatch, and says a finished one is finished without changing it", async () => {
    await startDaemon();
    await spawnOver(socket(), dispatchFor(world, "dispatch-api-hang", "hang"));
    await waitFor(async () => {
      const body = (await apiRequest(socket(), "GET", "/v1/status?dispatch_id=dispatch-api-hang")).body as {
        status: string;
      };
      return body.status === "running" ? true : undefined;
    });
    const cancel = await apiRequest(socket(), "POST", "/v1/cancel", {
      body: JSON.stringify({ dispatch_id: "dispatch-api-hang", reason: "changed my mind" }),
    });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toEqual({ dispatch_id: "dispatch-api-hang", outcome: "cancelling", changed: true });
    const ended = parseValue(
      "dispatch-snapshot",
      (await terminalSnapshot(socket(), "dispatch-api-hang")).body,
    );
    expect(ended.status).toBe("cancelled");
    const reportBefore = await readFile(world.layout.dispatch.completedJson("dispatch-api-hang"), "utf8");
    const again = await apiRequest(socket(), "POST", "/v1/cancel", {
      body: JSON.stringify({ dispatch_id: "dispatch-api-hang" }),
    });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({
      dispatch_id: "dispatch-api-hang",
      outcome: "finished",
      changed: false,
      status: "cancelled",
    });
    expect(await readFile(world.layout.dispatch.completedJson("dispatch-api-hang"), "utf8")).toBe(
      reportBefore,
    );
    const unknown = await apiRequest(socket(), "POST", "/v1/cancel", {
      body: JSON.stringify({ dispatch_id: "dispatch-nobody" }),
    });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ error: "not_found", dispatch_id: "dispatch-nobody" });
  });

  it("takes a dispatch once by id, whichever door it came through first", async () => {
    await startDaemon();
    const dispatch = dispatchFor(world, "dispatch-both-doors", "sleep 10");
    await writeDispatchFile(world.layout, dispatch as DispatchInput);
    await waitFor(() => completionOf(world.layout, "dispatch-both-doors"));
    const second = await spawnOver(socket(), dispatch);
    expect(second.status).toBe(409);
    expect(second.body).toMatchObject({
      error: "duplicate",
      rule: "duplicate",
      dispatch_id: "dispatch-both-doors",
    });
  });

  it("answers queue_full with retry_after from the queue when max_queued dispatches wait", async () => {
    await startDaemon({}, { max_concurrent: 1, max_queued: 1 });
    expect((await spawnOver(socket(), dispatchFor(world, "dispatch-full-a", "hang"))).status).toBe(202);
    await waitFor(async () => (daemon?.snapshot().running.length === 1 ? true : undefined));
    expect((await spawnOver(socket(), dispatchFor(world, "dispatch-full-b", "sleep 1"))).status).toBe(202);
    const full = await spawnOver(socket(), dispatchFor(world, "dispatch-full-c", "sleep 1"));
    expect(full.status).toBe(429);
    const body = parseValue("callback-error", full.body);
    expect(body.error).toBe("queue_full");
    expect(body.retry_after_seconds).toBeGreaterThanOrEqual(5);
    expect(full.headers["retry-after"]).toBe(String(body.retry_after_seconds));
    // Nothing of the refused one was kept: it may be offered again later.
    await expect(stat(world.layout.dispatch.claimedFile("dispatch-full-c"))).rejects.toThrow();
  });
});

describe("bad input over the socket", { timeout: loadBudget(60_000) }, () => {
  it("gives each mistake a clear error and keeps serving", async () => {
    await startDaemon();
    const cases: Array<[string, string, string | undefined, number, string]> = [
      ["GET", "/v1/delete-everything", undefined, 404, "unknown_action"],
      ["DELETE", "/v1/sessions", undefined, 405, "method_not_allowed"],
      ["GET", "/v1/cancel", undefined, 405, "method_not_allowed"],
      ["POST", "/v1/sessions", "{not json", 400, "invalid_json"],
      ["POST", "/v1/sessions", JSON.stringify({ nope: 1 }), 400, "bad_request"],
      ["POST", "/v1/sessions", JSON.stringify({ dispatch: '{"id": 3}' }), 422, "invalid_dispatch"],
      ["POST", "/v1/sessions", JSON.stringify({ dispatch: "not json either" }), 400, "invalid_json"],
      ["POST", "/v1/cancel", JSON.stringify({ dispatch_id: "../../etc/passwd" }), 400, "bad_request"],
      ["GET", "/v1/status", undefined, 400, "bad_request"],
      ["GET", "/v1/status?dispatch_id=..%2F..%2Fetc%2Fpasswd", undefined, 400, "bad_request"],
      ["GET", "/v1/completion?dispatch_id=dispatch-%22%0A%E2%9C%93", undefined, 400, "bad_request"],
      ["GET", "/v1/status?dispatch_id=dispatch-never-seen", undefined, 404, "not_found"],
    ];
    for (const [method, path, body, status, code] of cases) {
      const answer = await apiRequest(socket(), method, path, body === undefined ? {} : { body });
      expect({ method, path, status: answer.status }).toEqual({ method, path, status });
      expect(parseValue("callback-error", answer.body).error).toBe(code);
    }
    const oversized = await apiRequest(socket(), "POST", "/v1/sessions", {
      body: JSON.stringify({ dispatch: "x".repeat(2 * 256 * 1024 + 70 * 1024) }),
    });
    expect(oversized.status).toBe(413);
    expect(oversized.body).toMatchObject({ error: "too_large" });
    const untrusted = await spawnOver(socket(), {
      ...dispatchFor(world, "dispatch-outside", "x"),
      project_dir: "/",
    });
    expect(untrusted.status).toBe(403);
    expect(untrusted.body).toMatchObject({
      error: "untrusted_repo",
      rule: "trusted-repos",
      dispatch_id: "dispatch-outside",
    });
    // Still serving, and still taking work.
    const after = await spawnOver(socket(), dispatchFor(world, "dispatch-after-bad", "commit after.txt"));
    expect(after.status).toBe(202);
    expect(await waitFor(() => completionOf(world.layout, "dispatch-after-bad"))).toMatchObject({
      status: "completed",
    });
  });

  it("refuses to replace a file at the socket path, and the daemon runs on without the API", async () => {
    await mkdir(world.layout.dispatch.incoming, { recursive: true });
    await writeFile(world.layout.dispatch.apiSocket, "not a socket\n");
    const lines: string[] = [];
    await startDaemon({ log: (line) => lines.push(line) });
    expect(await readFile(world.layout.dispatch.apiSocket, "utf8")).toBe("not a socket\n");
    expect(lines.join("\n")).toMatch(/exists and is not a socket/);
    const heartbeat = JSON.parse(await readFile(world.layout.dispatch.heartbeat, "utf8"));
    expect(heartbeat.api.error).toMatch(/not a socket/);
    await writeDispatchFile(
      world.layout,
      dispatchFor(world, "dispatch-no-api", "commit no-api.txt") as DispatchInput,
    );
    expect(await waitFor(() => completionOf(world.layout, "dispatch-no-api"))).toMatchObject({
      status: "completed",
    });
  });

  it("takes over a socket left by a crash, but not one another process serves", async () => {
    await mkdir(world.layout.dispatch.incoming, { recursive: true });
    // A socket nobody answers on, as a killed daemon leaves it.
    const stale = createServer();
    await new Promise<void>((resolve) => stale.listen(world.layout.dispatch.apiSocket, resolve));
    await new Promise<void>((resolve) => {
      (stale as unknown as { _handle: { close(): void } | null })._handle?.close();
      resolve();
    });
    await startDaemon();
    expect((await apiRequest(socket(), "GET", "/health")).status).toBe(200);
    await daemon?.stop(0);
    daemon = undefined;
    const other = createServer((connection) => connection.end());
    await new Promise<void>((resolve) => other.listen(world.layout.dispatch.apiSocket, resolve));
    try {
      const lines: string[] = [];
      await startDaemon({ log: (line) => lines.push(line) });
      expect(lines.join("\n")).toMatch(/another process already serves/);
    } finally {
      await new Promise<void>((resolve) => other.close(() => resolve()));
    }
  });
});

describe("the service API over TCP", { timeout: loadBudget(60_000) }, () => {
  it("needs the bearer token from .api-token and compares it whole", async () => {
    await mkdir(world.root, { recursive: true });
    await writeFile(world.layout.apiToken, "a-token-of-enough-length-1234\n", { mode: 0o600 });
    const running = await startDaemon({ serviceApi: { tcpPort: 0 } });
    const [host, port] = (running.serviceApiTcp ?? "").split(":");
    expect(host).toBe("127.0.0.1");
    const target = (token: string): ApiTarget => ({ host: "127.0.0.1", port: Number(port), token });
    const ok = await apiRequest(target("a-token-of-enough-length-1234"), "GET", "/v1/sessions");
    expect(ok.status).toBe(200);
    const wrong = await apiRequest(target("a-token-of-enough-length-1235"), "GET", "/v1/sessions");
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ error: "unauthorized" });
    const missing = await apiRequest({ host: "127.0.0.1", port: Number(port), token: "" }, "GET", "/health", {
      headers: { authorization: "" },
    });
    expect(missing.status).toBe(401);
    const prefix = await apiRequest(target("a-token-of-enough-length"), "GET", "/health");
    expect(prefix.status).toBe(401);
  });

  it("refuses a token file others can read: no TCP listener, the socket still serves", async () => {
    await mkdir(world.root, { recursive: true });
    await writeFile(world.layout.apiToken, "a-token-of-enough-length-1234\n");
    await chmod(world.layout.apiToken, 0o644);
    const lines: string[] = [];
    const running = await startDaemon({ serviceApi: { tcpPort: 0 }, log: (line) => lines.push(line) });
    expect(running.serviceApiTcp).toBeUndefined();
    expect(lines.join("\n")).toMatch(/chmod 600/);
    expect((await apiRequest(socket(), "GET", "/health")).status).toBe(200);
  });
});
