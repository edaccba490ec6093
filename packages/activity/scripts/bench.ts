/**
 * Benchmark: five years of weekly activity files (about a million entries by default),
 * then the week query and a project query across every week, each as a ratio against jq
 * doing the same selection on the same files in this run, and the CLI's start-up as a
 * ratio against `node -e 0`.
 *
 *   pnpm bench                       # 1,000,000 entries
 *   pnpm bench --entries 100000      # or ACTIVITY_BENCH_ENTRIES=100000
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gstackLayout } from "@gstack/contracts";
import { createActivityLog, shiftWeek, weekStart } from "../src/index";

const packageDir = join(import.meta.dirname, "..");
const cli = join(packageDir, "dist", "cli.js");
const jq = process.env.JQ ?? "/usr/bin/jq";

function option(name: string, fallback: number): number {
  const index = process.argv.indexOf(`--${name}`);
  const text = index >= 0 ? process.argv[index + 1] : process.env[`ACTIVITY_BENCH_${name.toUpperCase()}`];
  const value = text === undefined ? fallback : Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} must be a positive whole number`);
  return value;
}

const totalEntries = option("entries", 1_000_000);
const weekCount = option("weeks", 261);
const lastWeek = "2026-W47";
const firstWeek = shiftWeek(lastWeek, -(weekCount - 1));
const projects = Array.from({ length: 24 }, (_, index) => `owner-project-${String(index).padStart(2, "0")}`);
const skills = [
  "ship",
  "review",
  "qa",
  "investigate",
  "plan-eng-review",
  "office-hours",
  "retro",
  "document-release",
];
const outcomes = ["success", "success", "success", "failed", "aborted"];

/** A small seeded generator, so every run measures the same files. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

async function generate(root: string): Promise<number> {
  const layout = gstackLayout(root);
  await mkdir(layout.activity.dir, { recursive: true });
  const next = random(47);
  const perWeek = Math.ceil(totalEntries / weekCount);
  let written = 0;
  let week = firstWeek;
  const pending: Promise<void>[] = [];
  for (let index = 0; index < weekCount && written < totalEntries; index++) {
    const start = weekStart(week).getTime();
    const count = Math.min(perWeek, totalEntries - written);
    const times = Array.from({ length: count }, () => start + Math.floor(next() * 604_800_000)).sort(
      (a, b) => a - b,
    );
    const lines: string[] = new Array(count);
    for (let item = 0; item < count; item++) {
      // Every value is plain ASCII, so the line is written as JSON directly: generating a
      // million entries through JSON.stringify would dominate the run.
      const project = projects[Math.floor(next() * projects.length)];
      const skill = skills[Math.floor(next() * skills.length)];
      const outcome = outcomes[Math.floor(next() * outcomes.length)];
      const artifacts =
        next() < 0.3
          ? `,"artifacts":["pr:${Math.floor(next() * 900) + 1}","commit:${Math.floor(next() * 0xfffffff).toString(16)}"]`
          : "";
      const dispatch = next() < 0.2 ? `,"dispatch":"wintermute"` : "";
      lines[item] =
        `{"ts":"${new Date(times[item]!).toISOString()}","project":"${project}","skill":"${skill}",` +
        `"duration":${Math.floor(next() * 5400)},"branch":"feat/change-${Math.floor(next() * 500)}",` +
        `"outcome":"${outcome}","session":"session-${index}-${Math.floor(item / 3)}",` +
        `"source":"${next() < 0.7 ? "timeline" : "daemon"}"${artifacts}${dispatch}}`;
    }
    pending.push(writeFile(layout.activity.week(week), `${lines.join("\n")}\n`));
    if (pending.length >= 8) await Promise.all(pending.splice(0));
    written += count;
    week = shiftWeek(week, 1);
  }
  await Promise.all(pending);
  return written;
}

/** Runs a program, counting its output lines (or JSON entries) without keeping the output. */
function runProcess(
  command: string,
  args: string[],
): Promise<{ milliseconds: number; lines: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
    let lines = 0;
    let bytes = 0;
    child.stdout.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
      for (let index = chunk.indexOf(10); index !== -1; index = chunk.indexOf(10, index + 1)) lines++;
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) reject(new Error(`${command} ${args.join(" ")} exited ${code}`));
      else resolve({ milliseconds: performance.now() - started, lines, bytes });
    });
  });
}

/**
 * Runs ours and the baseline alternately and returns the median of each, so that load
 * from other work on the machine falls on both alike.
 */
async function paired<A extends { milliseconds: number }, B extends { milliseconds: number }>(
  runs: number,
  ours: () => Promise<A>,
  baseline: () => Promise<B>,
): Promise<[A, B]> {
  const left: A[] = [];
  const right: B[] = [];
  for (let index = 0; index < runs; index++) {
    left.push(await ours());
    right.push(await baseline());
  }
  const middle = <T extends { milliseconds: number }>(list: T[]) =>
    list.sort((first, second) => first.milliseconds - second.milliseconds)[Math.floor(list.length / 2)]!;
  return [middle(left), middle(right)];
}

async function timed<T>(task: () => Promise<T>): Promise<{ milliseconds: number; value: T }> {
  const started = performance.now();
  const value = await task();
  return { milliseconds: performance.now() - started, value };
}

const format = (milliseconds: number) =>
  milliseconds >= 1000 ? `${(milliseconds / 1000).toFixed(2)} s` : `${milliseconds.toFixed(1)} ms`;
const ratio = (ours: number, baseline: number) => `${(ours / baseline).toFixed(2)}×`;

function report(label: string, ours: number, baselineLabel: string, baseline: number): void {
  console.log(
    `  ${label.padEnd(44)} ${format(ours).padStart(9)}   ${ratio(ours, baseline).padStart(6)} ${baselineLabel} (${format(baseline)})`,
  );
}

async function main(): Promise<void> {
  if (!existsSync(jq)) throw new Error(`jq not found at ${jq}; install it (apt-get install jq) or set JQ`);
  if (!existsSync(cli)) execFileSync("tsup", [], { cwd: packageDir, stdio: "inherit" });
  const root = await mkdtemp(join(tmpdir(), "activity-bench-"));
  try {
    const generation = await timed(() => generate(root));
    const layout = gstackLayout(root);
    const files = (await createActivityLog({ root }).weeks()).map((week) => layout.activity.week(week));
    console.log(
      `activity bench: ${generation.value.toLocaleString("en")} entries in ${files.length} weekly files (${firstWeek} – ${lastWeek}), generated in ${format(generation.milliseconds)}; node ${process.version}, ${execFileSync(jq, ["--version"]).toString().trim()}`,
    );
    const log = createActivityLog({ root, now: () => new Date("2026-11-22T12:00:00Z") });
    const week = shiftWeek(lastWeek, -Math.floor(weekCount / 2));
    const weekFile = layout.activity.week(week);
    const project = projects[7]!;

    console.log(`\nweek query (${week}: every entry of one week)`);
    const jqWeekRun = () => runProcess(jq, ["-c", ".", weekFile]);
    const [libraryWeek, jqWeek] = await paired(
      5,
      async () => {
        const result = await timed(() => log.query({ week }));
        return { milliseconds: result.milliseconds, count: result.value.entries.length };
      },
      jqWeekRun,
    );
    const [cliWeek, jqWeekAgain] = await paired(
      5,
      () => runProcess(process.execPath, [cli, "query", "--root", root, "--week", week, "--json"]),
      jqWeekRun,
    );
    if (libraryWeek.count !== jqWeek.lines)
      throw new Error(`week query found ${libraryWeek.count}, jq ${jqWeek.lines}`);
    console.log(`  ${libraryWeek.count.toLocaleString("en")} entries, validated and sorted`);
    report("library query({ week }) in process", libraryWeek.milliseconds, "jq", jqWeek.milliseconds);
    report("gstack-activity query --week --json", cliWeek.milliseconds, "jq", jqWeekAgain.milliseconds);

    console.log(`\nproject query (${project} across all ${files.length} weeks)`);
    const filter = `select(.project == "${project}")`;
    const jqProjectRun = () => runProcess(jq, ["-c", filter, ...files]);
    const [libraryProject, jqProject] = await paired(
      1,
      async () => {
        const result = await timed(() => log.query({ project }));
        return { milliseconds: result.milliseconds, count: result.value.entries.length };
      },
      jqProjectRun,
    );
    const [cliProject] = await paired(
      1,
      () => runProcess(process.execPath, [cli, "query", "--root", root, "--project", project, "--json"]),
      async () => ({ milliseconds: 0 }),
    );
    if (libraryProject.count !== jqProject.lines) {
      throw new Error(`project query found ${libraryProject.count}, jq ${jqProject.lines}`);
    }
    console.log(`  ${libraryProject.count.toLocaleString("en")} entries, validated and sorted`);
    report(
      "library query({ project }) in process",
      libraryProject.milliseconds,
      "jq",
      jqProject.milliseconds,
    );
    report("gstack-activity query --project --json", cliProject.milliseconds, "jq", jqProject.milliseconds);

    console.log("\nstart-up");
    const empty = join(root, "empty");
    const bareRun = () => runProcess(process.execPath, ["-e", "0"]);
    const [help, bare] = await paired(11, () => runProcess(process.execPath, [cli, "--help"]), bareRun);
    const [emptyWeek, bareAgain] = await paired(
      11,
      () => runProcess(process.execPath, [cli, "week", "--root", empty, "--json"]),
      bareRun,
    );
    report("gstack-activity --help", help.milliseconds, "node -e 0", bare.milliseconds);
    report("gstack-activity week (empty root)", emptyWeek.milliseconds, "node -e 0", bareAgain.milliseconds);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

await main();
