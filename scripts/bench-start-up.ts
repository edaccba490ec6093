/**
 * Start-up of a package's built CLI as a ratio to `node -e 0`, measured in the same run: each command
 * and the bare `node` alternate, and the medians of many runs are compared, so load on a
 * shared machine affects both sides alike. Run `pnpm build` first.
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { performance } from "node:perf_hooks";

/** One command line to time, with a label for the report. */
export interface StartUpCase {
  label: string;
  args: string[];
}

function timeOnce(args: string[]): number {
  const started = performance.now();
  const result = spawnSync(process.execPath, args, { stdio: ["ignore", "ignore", "ignore"] });
  const elapsed = performance.now() - started;
  if (result.status !== 0) throw new Error(`node ${args.join(" ")} exited ${result.status}`);
  return elapsed;
}

/** The machine's load average over 1, 5 and 15 minutes, which every figure is printed with. */
export const loadLine = (): string =>
  loadavg()
    .map((load) => load.toFixed(2))
    .join(" ");

const median = (values: number[]): number =>
  [...values].sort((first, second) => first - second)[Math.floor(values.length / 2)]!;

/** Prints, per case, the median start-up time and its ratio to `node -e 0`. */
export function benchStartUp(cli: string, cases: readonly StartUpCase[], runs = 21): void {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run pnpm build first`);
  console.log(`start-up (median of ${runs} runs, against node -e 0 in the same run)`);
  for (const { label, args } of cases) {
    timeOnce([cli, ...args]);
    const ours: number[] = [];
    const bare: number[] = [];
    for (let index = 0; index < runs; index++) {
      ours.push(timeOnce([cli, ...args]));
      bare.push(timeOnce(["-e", "0"]));
    }
    const [mine, baseline] = [median(ours), median(bare)];
    console.log(
      `  ${label.padEnd(40)} ${mine.toFixed(1).padStart(7)} ms   ${(mine / baseline).toFixed(2)}× node -e 0 (${baseline.toFixed(1)} ms)   load ${loadLine()}`,
    );
  }
}
