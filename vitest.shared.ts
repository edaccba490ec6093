import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { loadBudget } from "./vitest.load-budget";

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

// `./dev test` sets GSTACK_TEST_REPORT_DIR: each package then also writes a JSON report there,
// from which the run prints the slowest packages, files and tests, and a failure's digest.
const reportDir = process.env.GSTACK_TEST_REPORT_DIR;
function jsonReport(dir: string): string {
  const { name } = JSON.parse(readFileSync(join(process.cwd(), "package.json"), "utf8")) as { name: string };
  return join(dir, `${name.replace(/^@/, "").replace("/", "__")}.json`);
}

/** The test settings every package shares: fast-check runs from a fixed, printed seed. */
export default defineConfig({
  test: {
    // Tests here start real processes (CLIs, daemons, git, the OpenClaw gateway); on a loaded
    // two-core machine one can take several seconds. No test asserts on time: these limits only
    // end a test that hangs, and grow with the load per core when the run starts (4× at load 8
    // on two cores), so work that takes a fixed amount of CPU is not cut short on a busy machine.
    testTimeout: loadBudget(60_000),
    // A package's test files run one after another in one worker process that keeps its loaded
    // modules, instead of a fresh process per file: each fresh one cost a third to half a second
    // of CPU (Node, vitest and the package's imports again). Every file sets up and removes its
    // own world; none mocks modules, and a stubbed env or PATH is put back by the file itself.
    isolate: false,
    hookTimeout: loadBudget(120_000),
    globalSetup: [here("./vitest.seed-banner.ts")],
    setupFiles: [here("./vitest.fast-check.ts"), here("./vitest.cpu-accounting.ts")],
    ...(reportDir ? { reporters: ["default", ["json", { outputFile: jsonReport(reportDir) }]] } : {}),
  },
});
