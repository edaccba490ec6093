import { execFile } from "node:child_process";
import { access, mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseValue, SERVICE_API_ROUTES } from "@gstack/contracts";
import { afterEach, beforeAll, beforeEach, describe, expect, it, onTestFailed } from "vitest";
import { parse } from "yaml";
import { loadBudget } from "../../../../vitest.load-budget";
import type { Daemon } from "../daemon";
import {
  dispatchCommand,
  dispatchFor,
  makeWorld,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";
import { ClawvisorLocal, type ServiceManifest } from "./clawvisor-local.test-support";

const builtCli = join(import.meta.dirname, "..", "..", "dist", "cli.js");
let world: TestWorld;
let daemon: Daemon | undefined;
let service: ClawvisorLocal | undefined;

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...dispatchCommand(), ...args],
      { cwd: join(import.meta.dirname, "..", ".."), env: { ...process.env, HOME: world.base } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

beforeAll(async () => {
  // The service starts the built command, as it would on a user's machine.
  await access(builtCli).catch(() => {
    throw new Error(`${builtCli} is missing: build the daemon first (pnpm --filter @gstack/daemon build)`);
  });
});

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  await service?.stop();
  service = undefined;
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
});

async function installService(): Promise<{ dir: string; manifest: ServiceManifest }> {
  const servicesDir = join(world.base, "clawvisor", "services");
  const installed = await runCli([
    "install",
    "--clawvisor",
    "--services-dir",
    servicesDir,
    "--root",
    world.root,
  ]);
  expect(installed.stderr).toBe("");
  expect(installed.stdout).toContain(`wrote ${join(servicesDir, "gstack-coding", "service.yaml")}`);
  const dir = join(servicesDir, "gstack-coding");
  return { dir, manifest: parse(await readFile(join(dir, "service.yaml"), "utf8")) as ServiceManifest };
}

async function startService(dir: string): Promise<ClawvisorLocal> {
  const runDir = join(world.base, "run");
  await mkdir(runDir, { recursive: true });
  service = await ClawvisorLocal.load(dir, runDir);
  await service.start();
  return service;
}

describe("gstack-dispatch install --clawvisor", { timeout: loadBudget(60_000) }, () => {
  it("prints the service.yaml with --dry-run and writes nothing", async () => {
    const printed = await runCli(["install", "--clawvisor", "--dry-run", "--root", world.root]);
    expect(printed.code).toBe(0);
    expect(printed.stderr).toContain(
      join(world.base, ".clawvisor", "local", "services", "gstack-coding", "service.yaml"),
    );
    const manifest = parse(printed.stdout) as ServiceManifest;
    expect(manifest).toMatchObject({ id: "gstack-coding", type: "server", health_check: "/health" });
    expect(manifest.env).toEqual({ GSTACK_HOME: world.root });
    await expect(access(join(world.base, ".clawvisor"))).rejects.toThrow();
  });

  it("describes the five actions on the routes the daemon serves, with their parameters and timeouts", async () => {
    const { manifest } = await installService();
    expect(manifest.start).toEqual([process.execPath, builtCli, "clawvisor-serve"]);
    const byId = Object.fromEntries(manifest.actions.map((action) => [action.id, action]));
    expect(Object.keys(byId).sort()).toEqual(
      ["cancel-session", "check-status", "get-completion", "list-sessions", "spawn-session"].sort(),
    );
    for (const [id, action] of Object.entries(byId)) {
      const route = SERVICE_API_ROUTES[id as keyof typeof SERVICE_API_ROUTES];
      expect({ id, method: action.method, path: action.path }).toEqual({ id, ...route });
      expect(action.timeout).toMatch(/^[0-9]+s$/);
    }
    expect(byId["spawn-session"]?.params?.map((param) => [param.name, param.required])).toEqual([
      ["dispatch", true],
    ]);
    expect(byId["check-status"]?.params?.map((param) => param.name)).toEqual(["dispatch_id"]);
    expect(byId["cancel-session"]?.params?.find((param) => param.name === "reason")?.default).toBeTruthy();
  });
});

describe("the gstack-coding service as clawvisor-local runs it", { timeout: loadBudget(60_000) }, () => {
  it("passes its health check and answers daemon_crashed while the daemon is not running", async () => {
    const { dir } = await installService();
    const running = await startService(dir);
    const health = await running.call("list-sessions");
    expect(health.success).toBe(false);
    expect(health.status).toBe(503);
    const body = parseValue("callback-error", health.body);
    expect(body).toMatchObject({ error: "daemon_crashed", retry_after_seconds: 60 });
    expect(body.message).toMatch(/not running \(it has not run here yet\)/);
  });

  it("runs every action end to end, with hostile parameter values reaching the daemon intact", async () => {
    const { dir } = await installService();
    const lines: string[] = [];
    daemon = testDaemon(world, { log: (line) => lines.push(line) });
    await daemon.start();
    const running = await startService(dir);
    // Where a dispatch got stuck is in the daemon's log and the service's.
    onTestFailed(() => console.log(`daemon log:\n${lines.join("\n")}\nservice log:\n${running.log}`));
    const hostileTask =
      'commit hostile.txt\nthen "quote" it \\ back\\slash\n\t✓ 日本語 🚀 {{dispatch}} </script>';
    const dispatch = dispatchFor(world, "dispatch-via-clawvisor", hostileTask);
    const spawned = await running.call("spawn-session", { dispatch: JSON.stringify(dispatch) });
    expect(spawned.status).toBe(202);
    expect(spawned.success).toBe(true);
    expect(parseValue("spawn-answer", spawned.body)).toMatchObject({ dispatch_id: "dispatch-via-clawvisor" });
    // The dispatch arrived byte for byte: what the daemon keeps is what was sent.
    expect(
      JSON.parse(await readFile(world.layout.dispatch.claimedFile("dispatch-via-clawvisor"), "utf8")),
    ).toEqual(dispatch);
    const done = await waitFor(async () => {
      const answer = await running.call("get-completion", { dispatch_id: "dispatch-via-clawvisor" });
      expect({
        success: answer.success,
        body: answer.success ? "" : answer.body,
        log: answer.success ? "" : running.log,
      }).toEqual({ success: true, body: "", log: "" });
      const snapshot = parseValue("dispatch-snapshot", answer.body);
      return snapshot.terminal ? snapshot : undefined;
    });
    expect(done).toMatchObject({ status: "completed", terminal: true, report: { commits: 1 } });
    const status = await running.call("check-status", { dispatch_id: "dispatch-via-clawvisor" });
    expect(status.sent.path).toBe("/v1/status?dispatch_id=dispatch-via-clawvisor");
    expect(parseValue("dispatch-snapshot", status.body).status).toBe("completed");

    const hostileIds = [
      "../../etc/passwd",
      "dispatch-../../x",
      'dispatch-"quoted"',
      "dispatch-line\nbreak",
      "dispatch-✓",
      "dispatch-a&dispatch_id=dispatch-via-clawvisor",
      "",
    ];
    for (const id of hostileIds) {
      for (const action of ["check-status", "get-completion"]) {
        const answer = await running.call(action, { dispatch_id: id });
        expect({ id, action, status: answer.status }).toEqual({ id, action, status: 400 });
        expect(parseValue("callback-error", answer.body).error).toBe("bad_request");
      }
      const cancel = await running.call("cancel-session", {
        dispatch_id: id,
        reason: 'a "reason"\nwith lines',
      });
      expect({
        id,
        status: cancel.status,
        log: cancel.status === 400 ? "" : running.log + lines.join("\n"),
      }).toEqual({
        id,
        status: 400,
        log: "",
      });
    }

    await running.call("spawn-session", {
      dispatch: JSON.stringify(dispatchFor(world, "dispatch-clawvisor-hang", "hang")),
    });
    await waitFor(async () => {
      const answer = await running.call("check-status", { dispatch_id: "dispatch-clawvisor-hang" });
      return (answer.body as { status?: string }).status === "running" ? true : undefined;
    });
    const listed = await running.call("list-sessions");
    expect(parseValue("list-sessions", listed.body).sessions.map((session) => session.id)).toEqual([
      "dispatch-clawvisor-hang",
    ]);
    const cancelled = await running.call("cancel-session", {
      dispatch_id: "dispatch-clawvisor-hang",
      reason: 'stop "now"\nplease ✓',
    });
    expect(cancelled.body).toEqual({
      dispatch_id: "dispatch-clawvisor-hang",
      outcome: "cancelling",
      changed: true,
    });
    const ended = await waitFor(async () => {
      const snapshot = parseValue(
        "dispatch-snapshot",
        (await running.call("get-completion", { dispatch_id: "dispatch-clawvisor-hang" })).body,
      );
      return snapshot.terminal ? snapshot : undefined;
    });
    expect(ended.status).toBe("cancelled");
    expect(ended.report?.error).toContain('stop "now"\nplease ✓');

    // The daemon stops; the service stays up and says so.
    await daemon.stop(0);
    daemon = undefined;
    const down = await running.call("get-completion", { dispatch_id: "dispatch-via-clawvisor" });
    expect(down.status).toBe(503);
    expect(parseValue("callback-error", down.body)).toMatchObject({ error: "daemon_crashed" });
    expect((down.body as { message: string }).message).toMatch(/last seen at/);
  });
});
