/**
 * Measures export, re-import and an incremental sync of 100,000 learnings, each as a
 * ratio against a plain read + JSON.parse of the same learnings.jsonl in the same run.
 * `LEARNINGS_BENCH_COUNT` changes the size, `LEARNINGS_BENCH_ROUNDS` the runs per figure (median).
 * Then the built CLI's start-up against `node -e 0` (run `pnpm build` first).
 */
import { appendFile, mkdir, mkdtemp, readFile, rm, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { benchStartUp } from "../../../scripts/bench-start-up";
import { exportProject, importProject, parseMemoryFile, syncProject } from "../src/index";
import { syncStatePath } from "../src/sync-state";
import { learning, writeBenchProject } from "./corpus";

const count = Number(process.env.LEARNINGS_BENCH_COUNT ?? 100_000);
const rounds = Number(process.env.LEARNINGS_BENCH_ROUNDS ?? 3);
interface Sample {
  ratio: number;
  ms: number;
  baselineMs: number;
  cpuRatio: number;
}

function cpuMs(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return (used.user + used.system) / 1000;
}

/**
 * Runs the baseline right before the task in every round and keeps the median of the
 * ratios, so load from other processes on the machine shifts both sides alike. The ratio of
 * CPU time (this process, all threads) is kept too: on a busy machine it moves far less than
 * the wall-clock one, though it leaves out time spent waiting for the disk.
 */
async function ratioAgainst(baseline: () => Promise<unknown>, task: () => Promise<unknown>): Promise<Sample> {
  const samples: Sample[] = [];
  for (let round = 0; round < rounds; round++) {
    let start = performance.now();
    let cpu = process.cpuUsage();
    await baseline();
    const baselineMs = performance.now() - start;
    const baselineCpu = cpuMs(cpu);
    start = performance.now();
    cpu = process.cpuUsage();
    await task();
    const ms = performance.now() - start;
    samples.push({ ratio: ms / baselineMs, ms, baselineMs, cpuRatio: cpuMs(cpu) / baselineCpu });
  }
  const cpuRatios = samples.map((sample) => sample.cpuRatio).sort((left, right) => left - right);
  samples.sort((left, right) => left.ratio - right.ratio);
  return {
    ...samples[Math.floor(samples.length / 2)]!,
    cpuRatio: cpuRatios[Math.floor(cpuRatios.length / 2)]!,
  };
}

const folder = await mkdtemp(join(tmpdir(), "learnings-bench-"));
try {
  const { root, workspace, project, learnings, memoryFile } = await writeBenchProject(folder, count);
  const options = { root, workspace, project };

  const baseline = async () => {
    const text = await readFile(learnings, "utf8");
    const parsed: unknown[] = [];
    for (const line of text.split("\n")) if (line !== "") parsed.push(JSON.parse(line));
    return parsed;
  };
  const exported = await ratioAgainst(baseline, async () => {
    await unlink(memoryFile).catch(() => undefined);
    await exportProject(options);
  });
  const reimported = await ratioAgainst(baseline, () => importProject(options));
  const reimportedFully = await ratioAgainst(baseline, async () => {
    await unlink(syncStatePath(learnings)).catch(() => undefined);
    await importProject(options);
  });
  const decoded = await ratioAgainst(baseline, async () =>
    parseMemoryFile(await readFile(memoryFile, "utf8")),
  );
  let next = count;
  const incremental = await ratioAgainst(baseline, async () => {
    await appendFile(learnings, `${JSON.stringify(learning(next++))}\n`);
    const report = await syncProject(options);
    if (report.exported !== next || !report.written)
      throw new Error(`expected ${next} exported, got ${report.exported}`);
  });

  const size = (await readFile(memoryFile)).length;
  const rows: [string, Sample][] = [
    ["export (jsonl → memory file, atomic write)", exported],
    ["re-import, nothing new (sync state holds)", reimported],
    ["re-import, nothing new, no sync state (reads everything)", reimportedFully],
    ["decode memory file only (markdown → entries)", decoded],
    ["incremental sync after one new learning", incremental],
  ];
  console.log(
    `${count} learnings, memory file ${(size / 1e6).toFixed(1)} MB, median ratio of ${rounds} paired run(s)`,
  );
  console.log("baseline: read learnings.jsonl + JSON.parse every line, run right before each measurement");
  for (const [name, value] of rows) {
    console.log(
      `${name}: ${value.ratio.toFixed(2)}× raw JSON.parse (${value.ms.toFixed(0)} ms vs ${value.baselineMs.toFixed(0)} ms), CPU time ${value.cpuRatio.toFixed(2)}×`,
    );
  }
} finally {
  await rm(folder, { recursive: true, force: true });
}

const startUpRoot = await mkdtemp(join(tmpdir(), "learnings-start-up-"));
try {
  await mkdir(join(startUpRoot, "workspace"), { recursive: true });
  benchStartUp(join(import.meta.dirname, "..", "dist", "cli.js"), [
    { label: "gstack-learnings --help", args: ["--help"] },
    { label: "gstack-learnings search --help", args: ["search", "--help"] },
    {
      label: "gstack-learnings search (empty project)",
      args: [
        "search",
        "retry",
        "--root",
        startUpRoot,
        "--workspace",
        join(startUpRoot, "workspace"),
        "--project",
        "owner-project",
      ],
    },
  ]);
} finally {
  await rm(startUpRoot, { recursive: true, force: true });
}
