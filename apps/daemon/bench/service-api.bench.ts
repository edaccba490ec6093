import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { gstackLayout } from "@gstack/contracts";
import { type ApiTarget, apiRequest, commitsSince, headCommit } from "@gstack/daemon-client";
import { Daemon } from "../src/daemon";
import { initRepository } from "../src/test-support";

const requests = Number(process.env.BENCH_API_REQUESTS ?? 1000);
const warmup = Math.min(200, Math.max(10, Math.round(requests / 10)));

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
const ms = (value: number) => `${value.toFixed(3)} ms`;

interface Probe {
  name: string;
  run(): Promise<unknown>;
}

function getProbe(name: string, target: ApiTarget, path: string): Probe {
  return {
    name,
    run: async () => {
      const answer = await apiRequest(target, "GET", path);
      if (answer.status !== 200) throw new Error(`${name}: ${answer.status} ${answer.text.slice(0, 200)}`);
    },
  };
}

async function timed(probe: Probe): Promise<number> {
  const begin = performance.now();
  await probe.run();
  return performance.now() - begin;
}

/** A daemon with two dispatches running (until it stops) and three waiting for a slot. */
async function busyDaemon(base: string) {
  const repo = join(base, "repo");
  initRepository(repo);
  const layout = gstackLayout(join(base, "state"));
  const daemon = new Daemon({
    root: layout.root,
    claudeBinary: "/nonexistent/claude",
    openclawWorkspace: false,
    settings: {
      trusted_repos: [base],
      max_concurrent: 2,
      heartbeat_seconds: 30,
      // Runs until stopped, whatever arguments follow.
      agents: { codex: { command: [process.execPath, "-e", "setInterval(() => {}, 60_000)"] } },
    },
  });
  await daemon.start();
  const target: ApiTarget = { socketPath: layout.dispatch.apiSocket };
  const ids = Array.from({ length: 5 }, (_, index) => `dispatch-bench-api-${index}`);
  for (const id of ids) {
    const dispatch = {
      id,
      dispatched_by: "bench",
      task: "wait",
      project: "bench",
      project_dir: repo,
      target_agent: "codex",
    };
    const answer = await apiRequest(target, "POST", "/v1/sessions", {
      body: JSON.stringify({ dispatch: JSON.stringify(dispatch) }),
    });
    if (answer.status !== 202) throw new Error(`spawn ${id}: ${answer.status} ${answer.text}`);
  }
  for (;;) {
    const list = (await apiRequest(target, "GET", "/v1/sessions")).body as { active: number; queued: number };
    if (list.active === 2 && list.queued === 3) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { daemon, target, repo, running: ids[0] as string, queued: ids[4] as string };
}

/** A bare node:http server on a Unix socket answering `{}`, as small as an API answer can be. */
async function bareServer(base: string) {
  const socketPath = join(base, "bare.sock");
  const server = createServer((_request, response) => {
    const text = "{}\n";
    response.writeHead(200, {
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(text),
      "cache-control": "no-store",
    });
    response.end(text);
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  return {
    target: { socketPath } as ApiTarget,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export async function benchServiceApi(): Promise<void> {
  const base = await mkdtemp(join(tmpdir(), "gstack-api-bench-"));
  const busy = await busyDaemon(base);
  const bare = await bareServer(base);
  const start = await headCommit(busy.repo);
  const probes: Probe[] = [
    getProbe("bare HTTP round trip", bare.target, "/"),
    getProbe("list-sessions", busy.target, "/v1/sessions"),
    getProbe("check-status (running)", busy.target, `/v1/status?dispatch_id=${busy.running}`),
    getProbe("check-status (queued)", busy.target, `/v1/status?dispatch_id=${busy.queued}`),
    // What a running session costs an answer: its commits since the start, asked of git.
    { name: "commit lookup", run: () => commitsSince(busy.repo, start) },
  ];
  const samples = probes.map(() => [] as number[]);
  try {
    for (let round = 0; round < warmup + requests; round += 1) {
      for (let step = 0; step < probes.length; step += 1) {
        const index = (round + step) % probes.length;
        const took = await timed(probes[index] as Probe);
        if (round >= warmup) samples[index]?.push(took);
      }
    }
  } finally {
    await bare.close();
    await busy.daemon.stop(0);
    await rm(base, { recursive: true, force: true });
  }
  const stats = samples.map((values) => {
    const sorted = [...values].sort((a, b) => a - b);
    return { median: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) };
  });
  const baseline = stats[0] as { median: number; p99: number };
  console.log(
    `service API over its Unix socket, ${requests} requests of each kind, interleaved (2 running, 3 queued):`,
  );
  console.log(`  bare HTTP round trip: median ${ms(baseline.median)}, p99 ${ms(baseline.p99)}`);
  const lookup = stats[probes.length - 1] as { median: number; p99: number };
  for (const [index, probe] of probes.entries()) {
    if (index === 0 || index === probes.length - 1) continue;
    const stat = stats[index] as { median: number; p99: number };
    console.log(
      `  ${probe.name} ${(stat.median / baseline.median).toFixed(1)}x bare HTTP round trip (median ${ms(stat.median)} vs ${ms(baseline.median)}); p99 ${(stat.p99 / baseline.p99).toFixed(1)}x (${ms(stat.p99)} vs ${ms(baseline.p99)})`,
    );
  }
  console.log(
    `  for scale, one commit count of a running session (read from .git while HEAD has not moved, else git log): median ${ms(lookup.median)}, p99 ${ms(lookup.p99)}`,
  );
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  await benchServiceApi();
}
