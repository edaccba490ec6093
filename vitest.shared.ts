import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

/** The test settings every package shares: fast-check runs from a fixed, printed seed. */
export default defineConfig({
  test: {
    globalSetup: [here("./vitest.seed-banner.ts")],
    setupFiles: [here("./vitest.fast-check.ts")],
  },
});
