/**
 * Measures the daemon against bare baselines in the same run and prints ratios:
 *   pickup    rename into dispatch/ → agent start, against a bare spawn of the same agent
 *   throughput N dispatches with a trivial agent, against a bare spawn loop at the same concurrency
 *   idle      CPU and memory of an idle daemon, against the same process before the daemon started
 *   service API list-sessions and check-status over the socket, against a bare HTTP round trip
 *             (bench/service-api.bench.ts)
 *   worktree  worktree creation on a 10,000-file repository, against a bare git worktree add, and
 *             pickup with it, against that plus a bare spawn (bench/worktree.bench.ts)
 *   start-up  gstack-dispatch --help and status, against node -e 0 (run pnpm build first)
 *   answer-resume  an accepted answer (approve, over the service API) to the resumed Claude Code
 *             agent's start, against a bare spawn of the same agent (bench/answer-resume.bench.ts)
 *   status    gstack-dispatch status and status --json with 300 worktrees awaiting landing,
 *             against node -e 0 (bench/status.bench.ts; run pnpm build first)
 *   land-resume  finishing a landing of 1,000 files a kill cut short, against one bare
 *             git read-tree -m -u of the same change (bench/land-resume.bench.ts)
 * BENCH_DISPATCHES (default 200), BENCH_PICKUPS (default 50), BENCH_IDLE_SECONDS (default 60) and
 * BENCH_API_REQUESTS (default 1000) shorten the run; BENCH_ONLY (a comma list of pickup,
 * throughput, service-api, worktree, idle, start-up, status, answer-resume, land-resume) runs only those parts.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gstackLayout } from "@gstack/contracts";
import type { AgentStarter } from "@gstack/daemon-client";
import { benchStartUp } from "../../../scripts/bench-start-up";
import { Daemon } from "../src/daemon";
import { startRunnerAgent } from "../src/run/runner-agent";
import { benchAnswerResume } from "./answer-resume.bench";
import { benchLandResume } from "./land-resume.bench";
import { benchServiceApi } from "./service-api.bench";
import { benchStatus } from "./status.bench";
import { benchWorktrees } from "./worktree.bench";

const dispatches = Number(process.env.BENCH_DISPATCHES ?? 200);
const pickups = Number(process.env.BENCH_PICKUPS ?? 50);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 60);
const concurrency = 2;
const agentCommand = ["/bin/true"];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const format = (ms: number) => `${ms.toFixed(2)} ms`;

function bareSpawn(): Promise<{ started: number; ended: number }> {
  return new Promise((resolve, reject) => {
    const begin = performance.now();
    const child = spawn(agentCommand[0] as string, agentCommand.slice(1), {
      stdio: "ignore",
      detached: true,
    });
    let started = 0;
    child.on("spawn", () => {
      started = performance.now() - begin;
    });
    child.on("error", reject);
    child.on("exit", () => resolve({ started, ended: performance.now() - begin }));
  });
}

async function world() {
  const base = await mkdtemp(join(tmpdir(), "gstack-daemon-bench-"));
  const repo = join(base, "repo");
  await mkdir(repo);
  execFileSync("git", ["init", "-q", repo]);
  // A dispatch's worktree starts from a commit.
  execFileSync("git", [
    "-C",
    repo,
    "-c",
    "user.name=b",
    "-c",
    "user.email=b@b",
    "commit",
    "-q",
    "--allow-empty",
    "-m",
    "start",
  ]);
  const layout = gstackLayout(join(base, "state"));
  return { base, repo, layout };
}

function dispatchJson(id: string, repo: string) {
  return JSON.stringify({
    id,
    dispatched_by: "bench",
    task: "nothing",
    project: "bench",
    project_dir: repo,
    target_agent: "codex",
  });
}

async function startDaemon(root: string, base: string, startAgent: AgentStarter, heartbeatSeconds = 30) {
  const daemon = new Daemon({
    root,
    claudeBinary: "/nonexistent/claude",
    startAgent,
    settings: {
      trusted_repos: [base],
      max_concurrent: concurrency,
      heartbeat_seconds: heartbeatSeconds,
      agents: { codex: { command: agentCommand } },
    },
  });
  await daemon.start();
  return daemon;
}

/** `gstack-dispatch --help` and `status` with no daemon, as ratios to `node -e 0` (needs a build). */
function benchCliStartUp() {
  const root = join(tmpdir(), `gstack-dispatch-start-up-${process.pid}`);
  benchStartUp(join(import.meta.dirname, "..", "dist", "cli.js"), [
    { label: "gstack-dispatch --help", args: ["--help"] },
    { label: "gstack-dispatch status (no daemon)", args: ["status", "--root", root] },
  ]);
}

async function benchPickup() {
  const { base, repo, layout } = await world();
  const startedAt = new Map<string, number>();
  const recording: AgentStarter = (options) => {
    startedAt.set(String(options.env?.GSTACK_DISPATCH_ID), performance.now());
    return startRunnerAgent(options);
  };
  const daemon = await startDaemon(layout.root, base, recording);
  const latencies: number[] = [];
  const bare: number[] = [];
  for (let index = 0; index < pickups; index += 1) {
    // A bare spawn between pickups, so both see the same machine.
    bare.push((await bareSpawn()).started);
    const id = `dispatch-pickup-${index}`;
    const temporary = join(layout.dispatch.tmp, `${id}.json`);
    await writeFile(temporary, dispatchJson(id, repo));
    const renamedAt = performance.now();
    await rename(temporary, join(layout.dispatch.incoming, `${id}.json`));
    while (!startedAt.has(id)) await sleep(1);
    latencies.push((startedAt.get(id) as number) - renamedAt);
    while (!existsSync(layout.dispatch.completedJson(id))) await sleep(2);
    await daemon.idle();
  }
  await daemon.stop(0);
  await rm(base, { recursive: true, force: true });
  const pickup = median(latencies);
  const spawnTime = median(bare);
  const p99 = (values: number[]) =>
    [...values].sort((a, b) => a - b)[Math.ceil(values.length * 0.99) - 1] ?? 0;
  console.log(
    `pickup latency (rename → agent start), median of ${pickups}: ${format(pickup)} = ${(pickup / spawnTime).toFixed(1)}× a bare spawn (${format(spawnTime)}); p99 ${format(p99(latencies))} (bare spawn p99 ${format(p99(bare))})`,
  );
}

async function benchThroughput() {
  const { base, repo, layout } = await world();
  const daemon = await startDaemon(layout.root, base, startRunnerAgent);
  const bareBefore = await bareLoop();
  const loopBefore = performance.eventLoopUtilization();
  const cpuBefore = process.cpuUsage();
  const begin = performance.now();
  for (let index = 0; index < dispatches; index += 1) {
    const id = `dispatch-many-${index}`;
    const temporary = join(layout.dispatch.tmp, `${id}.json`);
    await writeFile(temporary, dispatchJson(id, repo));
    await rename(temporary, join(layout.dispatch.incoming, `${id}.json`));
  }
  const { readdir } = await import("node:fs/promises");
  for (;;) {
    const done = (await readdir(layout.dispatch.completed)).filter((name) => name.endsWith(".json")).length;
    if (done >= dispatches) break;
    await sleep(20);
  }
  const daemonMs = performance.now() - begin;
  const busy = performance.eventLoopUtilization(loopBefore).utilization;
  const cpu = process.cpuUsage(cpuBefore);
  await daemon.stop(0);
  await rm(base, { recursive: true, force: true });
  // The bare loop runs before and after, and the ratio is against their mean, so a change in
  // the machine's load during the run moves both sides.
  const bareMs = (bareBefore + (await bareLoop())) / 2;
  console.log(
    `${dispatches} dispatches at ${concurrency} at once: ${(daemonMs / 1000).toFixed(2)} s (${(daemonMs / dispatches).toFixed(1)} ms each) = ${(daemonMs / bareMs).toFixed(1)}× a bare spawn loop (${(bareMs / 1000).toFixed(2)} s); the daemon's thread busy ${(busy * 100).toFixed(0)}% of the time, ${((cpu.user + cpu.system) / 1000 / dispatches).toFixed(1)} ms of CPU per dispatch`,
  );
}

/** The same number of bare spawns as dispatches, `concurrency` at a time; its duration in ms. */
async function bareLoop(): Promise<number> {
  const begin = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < dispatches) {
        next += 1;
        await bareSpawn();
      }
    }),
  );
  return performance.now() - begin;
}

async function idleWindow(seconds: number) {
  const cpu = process.cpuUsage();
  await sleep(seconds * 1000);
  const used = process.cpuUsage(cpu);
  return { cpuMs: (used.user + used.system) / 1000, rssMb: process.memoryUsage().rss / 1024 / 1024 };
}

async function benchIdle() {
  const baselineSeconds = Math.max(1, Math.round(idleSeconds / 4));
  const baseline = await idleWindow(baselineSeconds);
  const { base, layout } = await world();
  const daemon = await startDaemon(
    layout.root,
    base,
    startRunnerAgent,
    Math.min(30, Math.max(5, idleSeconds / 2)),
  );
  await sleep(500);
  const idle = await idleWindow(idleSeconds);
  await daemon.stop(0);
  await rm(base, { recursive: true, force: true });
  const perMinute = (cpuMs: number, seconds: number) => (cpuMs / seconds) * 60;
  const daemonCpu = perMinute(idle.cpuMs, idleSeconds);
  const baselineCpu = perMinute(baseline.cpuMs, baselineSeconds);
  console.log(
    `idle over ${idleSeconds} s: ${daemonCpu.toFixed(1)} ms CPU a minute (${(daemonCpu / Math.max(baselineCpu, 0.01)).toFixed(1)}× the same process before the daemon started, ${baselineCpu.toFixed(1)} ms), RSS ${idle.rssMb.toFixed(1)} MB (${(idle.rssMb / baseline.rssMb).toFixed(2)}× ${baseline.rssMb.toFixed(1)} MB)`,
  );
}

const only = process.env.BENCH_ONLY?.split(",").map((part) => part.trim());
const wanted = (part: string) => !only || only.includes(part);
if (wanted("pickup")) await benchPickup();
if (wanted("throughput")) await benchThroughput();
if (wanted("service-api")) await benchServiceApi();
if (wanted("worktree")) await benchWorktrees();
if (wanted("idle")) await benchIdle();
if (wanted("start-up")) benchCliStartUp();
if (wanted("status")) await benchStatus();
if (wanted("answer-resume")) await benchAnswerResume();
if (wanted("land-resume")) await benchLandResume();
