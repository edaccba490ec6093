import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, stat, writeFile } from "node:fs/promises";
import {
  abstractSocketHolder,
  formatStatus,
  osLockHolder,
  readStatus,
  takeDaemonLock,
} from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeWorld, startChildDaemon, type TestWorld, waitFor } from "../test-support";

/**
 * The daemon's lock on Linux is an abstract socket whose name every user of the machine can see
 * in /proc/net/unix and bind. These tests hold that name from a real process of another user
 * (uid 65534, "nobody"); making one takes root, so without it only the same-user cases run.
 */
const linux = process.platform === "linux";
const root = process.getuid?.() === 0;
const OTHER_UID = 65534;

let world: TestWorld;
const children: ChildProcess[] = [];

beforeEach(async () => {
  world = await makeWorld();
  await mkdir(world.layout.dispatch.incoming, { recursive: true });
});

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
      await new Promise((done) => child.once("exit", done));
    }
  }
  await world.cleanup();
});

async function lockName(): Promise<string> {
  const { dev, ino } = await stat(world.root, { bigint: true });
  return `gstack-dispatch/${dev}/${ino}`;
}

/** A real process, of `uid` when given, that binds the daemon's lock name and keeps it. */
async function squatter(uid?: number): Promise<ChildProcess> {
  const script = `require("node:net").createServer().listen({ path: "\\0" + process.argv[1], exclusive: true }, () => console.log("listening"));`;
  const child = spawn(process.execPath, ["-e", script, await lockName()], {
    stdio: ["ignore", "pipe", "pipe"],
    ...(uid !== undefined ? { uid, gid: uid } : {}),
  });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  await waitFor(() => {
    if (child.exitCode !== null) throw new Error(`the holder exited: ${output}`);
    return output.includes("listening") ? true : undefined;
  });
  return child;
}

/** A pid that was a process of this user and no longer is. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", "0"], { stdio: "ignore" });
  await new Promise((done) => child.once("exit", done));
  return child.pid as number;
}

async function lateHeartbeat(pid: number): Promise<void> {
  await writeFile(
    world.layout.dispatch.heartbeat,
    JSON.stringify({
      ts: new Date(Date.now() - 10 * 60_000).toISOString(),
      active: 0,
      queued: 0,
      pid,
      interval_seconds: 30,
    }),
  );
}

describe.skipIf(!linux)("the lock's name held by a process that is not our daemon", () => {
  it.skipIf(!root)(
    "another user holding it is named by uid and pid, and no daemon takes it for ours",
    async () => {
      const holder = await squatter(OTHER_UID);
      const seen = abstractSocketHolder(`\0${await lockName()}`);
      expect(seen).toMatchObject({ pid: holder.pid, uid: OTHER_UID });

      const refusal = await takeDaemonLock(world.layout).then(
        () => "taken",
        (error: Error) => error.message,
      );
      expect(refusal).toContain(`is held by another user, uid ${OTHER_UID} (pid ${holder.pid})`);
      expect(refusal).toContain("not by a gstack-dispatch daemon of yours");
      expect(refusal).toContain("--root");
      expect(refusal).not.toMatch(/another gstack-dispatch daemon .*is already running/);

      // status, with the heartbeat of a daemon that died: not running, and why none can start.
      await lateHeartbeat(await deadPid());
      const status = await readStatus(world.layout);
      expect(status.alive).toBe(false);
      expect(status.heartbeatLate).toBeUndefined();
      const text = formatStatus(status);
      expect(text).toMatch(/^daemon not running\n/);
      expect(text).toContain(`held by another user, uid ${OTHER_UID} (pid ${holder.pid})`);

      // A real daemon refuses to start in those words, and starts once the holder is gone.
      const refused = startChildDaemon(world);
      children.push(refused.child);
      await refused.exited;
      expect(refused.output()).toContain(`held by another user, uid ${OTHER_UID}`);
      holder.kill("SIGKILL");
      await new Promise((done) => holder.once("exit", done));
      const daemon = startChildDaemon(world);
      children.push(daemon.child);
      await waitFor(() => (daemon.output().includes("daemon ready") ? true : undefined), 30_000);
      const ours = await osLockHolder(world.root, world.layout.dispatch.lock);
      expect(ours).toMatchObject({ pid: daemon.child.pid, uid: process.getuid?.() });
    },
    120_000,
  );

  it("a process of this user holding it while the heartbeat's daemon is dead is not that daemon, late", async () => {
    const holder = await squatter();
    const dead = await deadPid();
    await lateHeartbeat(dead);
    const status = await readStatus(world.layout);
    expect(status.alive).toBe(false);
    expect(formatStatus(status)).not.toContain(`pid ${dead}`);
    const refusal = await takeDaemonLock(world.layout).then(
      () => "taken",
      (error: Error) => error.message,
    );
    expect(refusal).toContain(`another gstack-dispatch daemon (pid ${holder.pid}) is already running`);
  });

  it("a daemon holding it with its heartbeat late is running, late", async () => {
    const daemon = startChildDaemon(world, { heartbeatSeconds: 3600 });
    children.push(daemon.child);
    await waitFor(() => (daemon.output().includes("daemon ready") ? true : undefined), 30_000);
    await lateHeartbeat(daemon.child.pid as number);
    const status = await readStatus(world.layout);
    expect(status).toMatchObject({ alive: true, heartbeatLate: true });
    expect(formatStatus(status)).toContain(`daemon running (pid ${daemon.child.pid}`);
  }, 60_000);
});
