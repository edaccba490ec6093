import { afterEach, beforeEach } from "vitest";
import type { Daemon, DaemonOptions } from "./daemon";
import { makeWorld, type TestWorld, testDaemon } from "./test-support";

/** The world of one daemon test, as {@link useDaemonWorld} builds it. */
export interface DaemonTestWorld {
  /** This test's world: a state root and a trusted scratch repository with the trivial agent. */
  readonly world: TestWorld;
  /**
   * A {@link testDaemon} on this test's world, started. It is stopped after the test (a stop the
   * test made itself is no harm); one whose start failed is not kept.
   */
  start(options?: Partial<DaemonOptions>, settings?: Record<string, unknown>): Promise<Daemon>;
}

/**
 * The set-up most daemon test files share: a fresh {@link TestWorld} before each test; after it,
 * every daemon started through `start` stopped (newest first) and the world removed. A file's
 * own `afterEach` runs before this one's, while its daemons still run.
 */
export function useDaemonWorld(): DaemonTestWorld {
  let current: TestWorld | undefined;
  const started: Daemon[] = [];
  beforeEach(async () => {
    current = await makeWorld();
  });
  afterEach(async () => {
    for (const daemon of started.splice(0).reverse()) await daemon.stop(0);
    await current?.cleanup();
    current = undefined;
  });
  const world = (): TestWorld => {
    if (!current) throw new Error("the daemon test world exists only inside a test");
    return current;
  };
  return {
    get world() {
      return world();
    },
    async start(options = {}, settings = {}) {
      const daemon = testDaemon(world(), options, settings);
      await daemon.start();
      started.push(daemon);
      return daemon;
    },
  };
}
