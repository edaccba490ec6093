import { mkdir, readdir, readFile, stat, writeFile } from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "./daemon";
import { makeWorld, type TestWorld, testDaemon } from "./test-support";

let world: TestWorld;
let daemon: Daemon | undefined;

beforeEach(async () => {
  world = await makeWorld();
  await mkdir(world.layout.dispatch.incoming, { recursive: true });
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
});

function newDaemon(): Daemon {
  return testDaemon(world);
}

describe("the daemon lock", () => {
  it("ignores a lock file left behind, whatever it holds: the kernel lock died with its daemon", async () => {
    await writeFile(world.layout.dispatch.lock, "");
    daemon = newDaemon();
    await daemon.start();
    const held = JSON.parse(await readFile(world.layout.dispatch.lock, "utf8")) as { pid: number };
    expect(held.pid).toBe(process.pid);
    expect((await stat(world.layout.dispatch.lock)).mode & 0o777).toBe(0o600);
  });

  it("refuses a second daemon on the same state root, and lets one start after a stop", async () => {
    daemon = newDaemon();
    await daemon.start();
    await expect(newDaemon().start()).rejects.toThrow(
      `another gstack-dispatch daemon (pid ${process.pid}) is already running for ${world.root}`,
    );
    await daemon.stop(0);
    daemon = newDaemon();
    await daemon.start();
    // No draft of the lock is left next to it.
    expect(
      (await readdir(world.layout.dispatch.incoming)).filter((name) => name.startsWith(".daemon.lock.")),
    ).toEqual([]);
  });
});
