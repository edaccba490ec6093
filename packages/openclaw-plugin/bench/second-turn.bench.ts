/**
 * Time to the first text of a session's SECOND turn through the contractor sidecar, with the real
 * Claude Code CLI and the scripted model, against the scripted model's own first byte, in the same
 * run (BENCH_TURNS sessions each, default 6, alternating, after one of each not counted; medians):
 *   model       a streamed Messages request straight to the scripted model, to its first text delta
 *   kept        the sidecar keeping the session's `claude` between turns (idleTimeoutMs 10 minutes)
 *   per turn    the sidecar starting a `claude` for every turn and resuming the session (idleTimeoutMs 0)
 * The scripted model holds each answer BENCH_MODEL_FIRST_BYTE_MS (default 1000) before its first
 * byte, as a real model takes time to its first token; the same delay is in all three figures.
 */
import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@gstack/openclaw-testbed";
import { type ScriptedStep, startScriptedModel } from "@gstack/scripted-model";
import { resolveContractorSettings } from "../src/sidecar/contractor-settings";
import { SessionMap } from "../src/sidecar/session-map";
import { releaseSidecar, startSidecarOnce } from "../src/sidecar/sidecar-service";
import { claudeForTests, contractorResponder, openclawBody } from "../src/sidecar/sidecar-test-support";

const turns = Number(process.env.BENCH_TURNS ?? 6);
const firstByteMs = Number(process.env.BENCH_MODEL_FIRST_BYTE_MS ?? 1000);
const base = await mkdtemp(join(tmpdir(), "gstack-second-turn-bench-"));
const project = join(base, "project");
const claudeHome = join(base, "claude-home");
await mkdir(project, { recursive: true });
await mkdir(claudeHome, { recursive: true });
execFileSync("git", ["init", "-q", project]);
const model = await startScriptedModel({
  respond: (request) => {
    const step = contractorResponder(request);
    if (step.type === "hang") return step;
    const held = new Promise<void>((resolve) => setTimeout(resolve, firstByteMs));
    return { ...step, holdUntil: held } as ScriptedStep;
  },
});
const env = { ...model.claudeEnv(claudeHome), CLAUDE_CODE_MAX_RETRIES: "0" };
const key = "bench-key-0123456789abcdef";

async function sidecarWith(name: string, idleTimeoutMs: number) {
  const settings = resolveContractorSettings(
    {
      enabled: true,
      projectDir: project,
      port: await freePort(),
      claudeBinary: claudeForTests,
      idleTimeoutMs,
    },
    join(base, name),
  );
  const started = await startSidecarOnce(settings, {
    key,
    sessions: new SessionMap(settings.sessionsFile),
    claudeEnv: env,
    allowedTools: [],
    disallowedTools: [],
    log: { info: () => undefined, warn: (message) => console.warn(message) },
  });
  if (started.kind !== "started") throw new Error(`sidecar not started: ${JSON.stringify(started)}`);
  return started.sidecar;
}

const kept = await sidecarWith("kept", 600_000);
const perTurn = await sidecarWith("per-turn", 0);

/** From the request to the first text the stream carries, and the whole text. */
async function firstText(
  url: string,
  init: RequestInit,
  marker: string,
): Promise<{ ms: number; text: string }> {
  const start = performance.now();
  const response = await fetch(url, init);
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let first: number | undefined;
  let seen = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    seen += decoder.decode(value, { stream: true });
    if (first === undefined && seen.includes(marker)) first = performance.now();
  }
  if (first === undefined) throw new Error(`no text from ${url}: ${seen.slice(0, 400)}`);
  return { ms: first - start, text: seen };
}

function chat(url: string, body: unknown) {
  return firstText(
    `${url}/chat/completions`,
    {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    },
    '"content":"A',
  );
}

/** Turn 1 of a new session (not timed), then turn 2, timed. */
async function secondTurn(url: string, session: string): Promise<number> {
  const first = await chat(
    url,
    openclawBody({ sessionKey: session, conversation: [`Hello MARK-${session.length}a`] }),
  );
  const said = /ANSWER [^"]*/.exec(first.text)?.[0] ?? "ANSWER";
  const second = await chat(
    url,
    openclawBody({
      sessionKey: session,
      conversation: [`Hello MARK-${session.length}a`, said, `And MARK-${session.length}b`],
    }),
  );
  return second.ms;
}

/** A streamed Messages request straight to the scripted model, shaped as Claude Code's (tools offered). */
async function modelFirstByte(index: number): Promise<number> {
  const result = await firstText(
    `${model.url}/v1/messages?beta=true`,
    {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": "scripted-model-key" },
      body: JSON.stringify({
        model: "claude-sonnet-4-5",
        max_tokens: 1024,
        stream: true,
        system: "You are Claude Code.",
        tools: [{ name: "Write", description: "Write a file", input_schema: { type: "object" } }],
        messages: [{ role: "user", content: [{ type: "text", text: `Direct MARK-m${index}` }] }],
      }),
    },
    "text_delta",
  );
  return result.ms;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

try {
  await modelFirstByte(-1);
  await secondTurn(kept.url, "bench:kept:warm");
  await secondTurn(perTurn.url, "bench:per-turn:warm");
  const modelRuns: number[] = [];
  const keptRuns: number[] = [];
  const perTurnRuns: number[] = [];
  for (let index = 0; index < turns; index += 1) {
    modelRuns.push(await modelFirstByte(index));
    keptRuns.push(await secondTurn(kept.url, `bench:kept:${index}`));
    perTurnRuns.push(await secondTurn(perTurn.url, `bench:per-turn:${index}`));
  }
  const modelMs = median(modelRuns);
  const keptMs = median(keptRuns);
  const perTurnMs = median(perTurnRuns);
  const load = loadavg()
    .map((value) => value.toFixed(1))
    .join(" ");
  console.log(
    `second turn, first text (medians of ${turns}; model holds its first byte ${firstByteMs} ms; load ${load}):`,
  );
  console.log(`  scripted model's own first byte  ${modelMs.toFixed(0)} ms (baseline)`);
  console.log(
    `  kept claude (idleTimeoutMs 10 min) ${keptMs.toFixed(0)} ms: ${(keptMs / modelMs).toFixed(2)}× (goal ≤ 1.2×), +${(keptMs - modelMs).toFixed(0)} ms`,
  );
  console.log(
    `  claude per turn (idleTimeoutMs 0)  ${perTurnMs.toFixed(0)} ms: ${(perTurnMs / modelMs).toFixed(2)}×, +${(perTurnMs - modelMs).toFixed(0)} ms`,
  );
} finally {
  await releaseSidecar(kept.port);
  await releaseSidecar(perTurn.port);
  await model.close();
  await rm(base, { recursive: true, force: true });
}
