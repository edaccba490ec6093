/**
 * Benchmarks for @gstack/agent-runner, each reported as a ratio against a baseline measured in
 * the same run:
 *   1. stream-json parsing throughput against a bare split-lines + JSON.parse loop;
 *   2. peak memory while following a 1 GB stream produced by a real child process;
 *   3. the cost of startAgent over a bare child_process spawn, for a trivial agent.
 * Options: --parse-mb=128 --stream-mb=1024 --spawns=40
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ClaudeStreamTracker } from "../src/claude-stream-tracker";
import { LineSplitter } from "../src/line-splitter";
import { startAgent } from "../src/start-agent";
import { sampleLines } from "./stream-sample";

const option = (name: string, fallback: number) => {
  const found = process.argv.find((argument) => argument.startsWith(`--${name}=`));
  return found ? Number(found.split("=")[1]) : fallback;
};
const megabyte = 1024 * 1024;

function chunksOf(totalBytes: number, chunkSize = 64 * 1024): Buffer[] {
  const block = Buffer.from(`${sampleLines().join("\n")}\n`);
  const repeated = Buffer.concat(
    Array.from({ length: Math.ceil(totalBytes / block.length) }, () => block),
  ).subarray(0, totalBytes);
  const chunks: Buffer[] = [];
  for (let start = 0; start < repeated.length; start += chunkSize)
    chunks.push(repeated.subarray(start, start + chunkSize));
  return chunks;
}

function baselineParse(chunks: Buffer[]): number {
  let rest = "";
  let parsed = 0;
  for (const chunk of chunks) {
    const lines = (rest + chunk.toString("utf8")).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) if (line) parsed += JSON.parse(line) ? 1 : 0;
  }
  return parsed;
}

function trackedParse(chunks: Buffer[]): number {
  const splitter = new LineSplitter();
  const tracker = new ClaudeStreamTracker();
  const onLine = (line: string) => tracker.line(line);
  for (const chunk of chunks) splitter.push(chunk, onLine);
  splitter.end(onLine);
  return tracker.progress().events;
}

function best(runs: number, work: () => void): number {
  let fastest = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run += 1) {
    const start = performance.now();
    work();
    fastest = Math.min(fastest, performance.now() - start);
  }
  return fastest;
}

async function parsing() {
  const bytes = option("parse-mb", 128) * megabyte;
  const chunks = chunksOf(bytes);
  const baselineCount = baselineParse(chunks);
  const trackedCount = trackedParse(chunks);
  if (baselineCount !== trackedCount)
    throw new Error(`event counts differ: ${baselineCount} vs ${trackedCount}`);
  const baseline = best(3, () => baselineParse(chunks));
  const tracked = best(3, () => trackedParse(chunks));
  const rate = (milliseconds: number) => (bytes / megabyte / (milliseconds / 1000)).toFixed(0);
  console.log(
    `parse: ${(bytes / megabyte).toFixed(0)} MB stream-json, LineSplitter+ClaudeStreamTracker ${rate(tracked)} MB/s, bare split+JSON.parse ${rate(baseline)} MB/s → ${(baseline / tracked).toFixed(2)}× the baseline's throughput`,
  );
}

async function memory() {
  const bytes = option("stream-mb", 1024) * megabyte;
  const cwd = mkdtempSync(join(tmpdir(), "agent-runner-bench-"));
  globalThis.gc?.();
  const before = process.memoryUsage().rss;
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  const start = performance.now();
  const generator = join(import.meta.dirname, "generate-stream.mjs");
  const sample = join(cwd, "sample.jsonl");
  let result: Awaited<ReturnType<typeof startAgent>["done"]>;
  try {
    writeFileSync(sample, `${sampleLines().join("\n")}\n`);
    const agent = startAgent({
      agent: "claude",
      prompt: "unused",
      cwd,
      trackGit: false,
      command: { command: [process.execPath, generator, sample, String(bytes)] },
    });
    result = await agent.done;
  } finally {
    clearInterval(sampler);
    rmSync(cwd, { recursive: true, force: true });
  }
  const elapsed = performance.now() - start;
  peak = Math.max(peak, process.memoryUsage().rss);
  if (result.failure) throw new Error(`stream run failed: ${result.failure.message}`);
  const read = result.progress.outputBytes;
  console.log(
    `memory: followed ${(read / megabyte).toFixed(0)} MB from a child process in ${(elapsed / 1000).toFixed(1)} s (${(read / megabyte / (elapsed / 1000)).toFixed(0)} MB/s, ${result.progress.events} events); RSS ${(before / megabyte).toFixed(0)} MB → peak ${(peak / megabyte).toFixed(0)} MB: growth ${((peak - before) / megabyte).toFixed(1)} MB = ${((peak - before) / read).toFixed(4)}× the stream size`,
  );
}

function bareSpawn(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("/bin/true", [], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", () => resolve());
  });
}

async function spawning() {
  const runs = option("spawns", 40);
  const cwd = mkdtempSync(join(tmpdir(), "agent-runner-bench-"));
  const trivial = { agent: "custom", prompt: "x", cwd, command: { command: ["/bin/true"] } };
  const contenders: Record<string, () => Promise<unknown>> = {
    bare: bareSpawn,
    startAgent: () => startAgent({ ...trivial, trackGit: false }).done,
    withGitCheck: () => startAgent(trivial).done,
  };
  const samples: Record<string, number[]> = { bare: [], startAgent: [], withGitCheck: [] };
  // Interleaved, so drift on a shared machine hits every contender alike.
  for (let run = -3; run < runs; run += 1) {
    for (const [name, work] of Object.entries(contenders)) {
      const start = performance.now();
      await work();
      if (run >= 0) samples[name]!.push(performance.now() - start);
    }
  }
  rmSync(cwd, { recursive: true, force: true });
  const median = (name: string) => {
    const sorted = [...samples[name]!].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)]!;
  };
  const bare = median("bare");
  const plain = median("startAgent");
  const withGit = median("withGitCheck");
  console.log(
    `spawn: median of ${runs} interleaved runs of /bin/true, bare spawn+exit ${bare.toFixed(2)} ms; startAgent ${plain.toFixed(2)} ms → ${(plain / bare).toFixed(2)}× (with the git repository check: ${withGit.toFixed(2)} ms → ${(withGit / bare).toFixed(2)}×)`,
  );
}

// Memory first, before the parsing benchmark's buffers inflate the heap it is measured against.
await memory();
await parsing();
await spawning();
