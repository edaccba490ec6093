import { mkdir, readdir, utimes, writeFile } from "node:fs/promises";
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
  it("leaves a fresh lock without a pid alone: another daemon may be writing it", async () => {
    await writeFile(world.layout.dispatch.lock, "");
    await expect(newDaemon().start()).rejects.toThrow(
      /another gstack-dispatch daemon is starting for .* has no pid yet/,
    );
  });

  it("takes over a lock without a pid once it is old", async () => {
    await writeFile(world.layout.dispatch.lock, "");
    const old = new Date(Date.now() - 60_000);
    await utimes(world.layout.dispatch.lock, old, old);
    daemon = newDaemon();
    await daemon.start();
    await expect(newDaemon().start()).rejects.toThrow(`already running for ${world.root}`);
    // No draft of the lock is left next to it.
    expect(
      (await readdir(world.layout.dispatch.incoming)).filter((name) => name.startsWith(".daemon.lock.")),
    ).toEqual([]);
  });
});
