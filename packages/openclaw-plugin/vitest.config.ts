import { defineConfig, mergeConfig } from "vitest/config";
import { loadBudget } from "../../vitest.load-budget";
import shared from "../../vitest.shared";

// The end-to-end tests start the real OpenClaw gateway, the real Claude Code CLI and the daemon,
// and a turn through them takes longer than most tests; the limits still grow with the load.
export default mergeConfig(
  shared,
  defineConfig({
    test: {
      testTimeout: loadBudget(180_000),
      hookTimeout: loadBudget(240_000),
      globalSetup: ["./vitest.pack-once.ts"],
    },
  }),
);
