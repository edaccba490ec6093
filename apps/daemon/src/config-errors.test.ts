import { mkdir } from "node:fs/promises";
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

describe("a configuration file that cannot be read", () => {
  const files = {
    "config.yaml": (w: TestWorld) => w.layout.config,
    "restrictions.yaml": (w: TestWorld) => w.layout.restrictions,
    ".dispatch-secret": (w: TestWorld) => w.layout.dispatchSecret,
  };
  for (const [name, pathOf] of Object.entries(files)) {
    it(`names ${name} when a folder stands in its place`, async () => {
      const path = pathOf(world);
      await mkdir(path, { recursive: true });
      daemon = testDaemon(world);
      const failure = await daemon.start().then(
        () => "started",
        (error: Error) => error.message,
      );
      expect(failure).toContain(path);
    });
  }
});
