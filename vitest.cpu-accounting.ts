/**
 * Loaded before every test file when `./dev test` asks for reports (GSTACK_TEST_REPORT_DIR):
 * appends the file's CPU time to `cpu.jsonl` there, its own and that of every child process it
 * started and collected (the daemons, CLIs, git and gateways its tests ran), from /proc. On a
 * busy two-core machine the wall time follows the whole run's CPU, so this says which file costs
 * the run's minutes. Processes a file leaves to pid 1 are not counted. Linux only; elsewhere
 * nothing is written.
 */
import { appendFileSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect } from "vitest";

const reportDir = process.env.GSTACK_TEST_REPORT_DIR;

/** CPU seconds of this process and of its collected children, or undefined off Linux. */
function cpuSeconds(): { own: number; children: number } | undefined {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    // After the command's closing parenthesis: field 3 (state) onwards; utime is field 14.
    // The counts are in USER_HZ, 100 a second on every Linux this runs on.
    const fields = stat
      .slice(stat.lastIndexOf(")") + 2)
      .split(" ")
      .map(Number);
    const [utime = 0, stime = 0, cutime = 0, cstime = 0] = fields.slice(11, 15);
    return { own: (utime + stime) / 100, children: (cutime + cstime) / 100 };
  } catch {
    return undefined;
  }
}

if (reportDir) {
  let start = cpuSeconds();
  let startedAt = Date.now();
  beforeAll(() => {
    start = cpuSeconds();
    startedAt = Date.now();
  });
  // Hooks of a setup file run first before and last after, so this sees the file's own clean-up.
  afterAll(() => {
    const end = cpuSeconds();
    if (!start || !end) return;
    const line = {
      file: expect.getState().testPath,
      own: Number((end.own - start.own).toFixed(2)),
      children: Number((end.children - start.children).toFixed(2)),
      wall: (Date.now() - startedAt) / 1000,
    };
    // One short line with O_APPEND: files ending at once in other processes never tear it. The
    // folder may not be there yet (the JSON reporter makes it at the end); a figure that cannot
    // be written is left out, never a test's failure.
    try {
      mkdirSync(reportDir, { recursive: true });
      appendFileSync(join(reportDir, "cpu.jsonl"), `${JSON.stringify(line)}\n`);
    } catch {}
  });
}
