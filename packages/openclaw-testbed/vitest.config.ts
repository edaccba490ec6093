import { defineConfig, mergeConfig } from "vitest/config";
import { loadBudget } from "../../vitest.load-budget";
import shared from "../../vitest.shared";

// Starting the real OpenClaw takes longer than most tests here; the limits still grow with the load.
export default mergeConfig(
  shared,
  defineConfig({ test: { testTimeout: loadBudget(120_000), hookTimeout: loadBudget(120_000) } }),
);
