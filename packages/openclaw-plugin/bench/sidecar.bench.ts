/**
 * The contractor sidecar against reading the Claude Code process directly, in the same run, with
 * the real CLI and the scripted model (BENCH_TURNS turns each, default 8, alternating, after one
 * of each not counted):
 *   first byte  from the request to the first streamed text at the HTTP client, against from the
 *               start of the same Claude Code turn to its first text read from the process
 *   cpu         this process's CPU time per turn through the sidecar, against per direct turn
 *               (both parse the CLI's output; the difference is the sidecar's own work)
 */
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@gstack/openclaw-testbed";
import { startScriptedModel } from "@gstack/scripted-model";
import { startClaudeTurn } from "../src/sidecar/claude-turn";
import { resolveContractorSettings } from "../src/sidecar/contractor-settings";
import { SessionMap } from "../src/sidecar/session-map";
import { releaseSidecar, startSidecarOnce } from "../src/sidecar/sidecar-service";
import { claudeForTests, contractorResponder, openclawBody } from "../src/sidecar/sidecar-test-support";

const turns = Number(process.env.BENCH_TURNS ?? 8);
const base = await mkdtemp(join(tmpdir(), "gstack-sidecar-bench-"));
const project = join(base, "project");
const claudeHome = join(base, "claude-home");
await mkdir(project, { recursive: true });
await mkdir(claudeHome, { recursive: true });
execFileSync("git", ["init", "-q", project]);
const model = await startScriptedModel({ respond: contractorResponder });
const env = { ...model.claudeEnv(claudeHome), CLAUDE_CODE_MAX_RETRIES: "0" };
const key = "bench-key-0123456789abcdef";
const port = await freePort();
const settings = resolveContractorSettings(
  { enabled: true, projectDir: project, port, claudeBinary: claudeForTests },
  join(base, "state"),
);
const started = await startSidecarOnce(settings, {
  key,
  sessions: new SessionMap(settings.sessionsFile),
  claudeEnv: env,
  allowedTools: [],
  disallowedTools: [],
  log: { info: () => undefined, warn: () => undefined },
});
if (started.kind !== "started") throw new Error(`sidecar not started: ${JSON.stringify(started)}`);
const sidecar = started.sidecar;

async function direct(index: number): Promise<{ firstMs: number; cpuMs: number }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  let first: number | undefined;
  const turn = startClaudeTurn({
    binary: claudeForTests,
    cwd: project,
    prompt: `Direct turn MARK-d${index}`,
    sessionKey: `bench:direct:${index}`,
    env,
    allowedTools: [],
    disallowedTools: [],
    timeoutMs: 120_000,
    onText: () => {
      first ??= performance.now();
    },
    onToolUse: () => undefined,
    onSessionId: () => undefined,
  });
  await turn.done;
  const used = process.cpuUsage(cpu);
  if (first === undefined) throw new Error("the direct turn said nothing");
  return { firstMs: first - start, cpuMs: (used.user + used.system) / 1000 };
}

async function throughSidecar(index: number): Promise<{ firstMs: number; cpuMs: number }> {
  const cpu = process.cpuUsage();
  const start = performance.now();
  const response = await fetch(`${sidecar.url}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(
      openclawBody({ sessionKey: `bench:sidecar:${index}`, conversation: [`Sidecar turn MARK-s${index}`] }),
    ),
  });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let first: number | undefined;
  let seen = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    seen += decoder.decode(value, { stream: true });
    if (first === undefined && seen.includes('"content":"A')) first = performance.now();
  }
  const used = process.cpuUsage(cpu);
  if (first === undefined) throw new Error(`the sidecar turn said nothing: ${seen.slice(0, 300)}`);
  return { firstMs: first - start, cpuMs: (used.user + used.system) / 1000 };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

try {
  await direct(-1);
  await throughSidecar(-1);
  const directRuns: { firstMs: number; cpuMs: number }[] = [];
  const sidecarRuns: { firstMs: number; cpuMs: number }[] = [];
  for (let index = 0; index < turns; index += 1) {
    directRuns.push(await direct(index));
    sidecarRuns.push(await throughSidecar(index));
  }
  const directFirst = median(directRuns.map((run) => run.firstMs));
  const sidecarFirst = median(sidecarRuns.map((run) => run.firstMs));
  const directCpu = median(directRuns.map((run) => run.cpuMs));
  const sidecarCpu = median(sidecarRuns.map((run) => run.cpuMs));
  console.log(`turns: ${turns} each (medians)`);
  console.log(
    `first byte: sidecar ${sidecarFirst.toFixed(0)} ms, direct ${directFirst.toFixed(0)} ms: ${(sidecarFirst / directFirst).toFixed(2)}× (goal ≤ 1.2×)`,
  );
  console.log(
    `cpu per turn in this process: sidecar ${sidecarCpu.toFixed(1)} ms, direct ${directCpu.toFixed(1)} ms: ${(sidecarCpu / directCpu).toFixed(2)}×, sidecar overhead ${(sidecarCpu - directCpu).toFixed(1)} ms`,
  );
} finally {
  await releaseSidecar(sidecar.port);
  await model.close();
  await rm(base, { recursive: true, force: true });
}
