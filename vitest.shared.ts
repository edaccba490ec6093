import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** The test settings every package shares: fast-check runs from a fixed, printed seed. */
export default defineConfig({
  test: {
    // Tests here start real processes (CLIs, daemons, git, the OpenClaw gateway); on a loaded
    // two-core machine one can take several seconds. No test asserts on time.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    globalSetup: [here("./vitest.seed-banner.ts")],
    setupFiles: [here("./vitest.fast-check.ts")],
  },
});
