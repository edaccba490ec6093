/**
 * From an accepted answer to the resumed agent's start, as a ratio to a bare spawn of the same
 * agent measured in the same run (issue: dispatches that wait for a person; goal ≤ 3×).
 *
 * The agent is the real Claude Code CLI, driven offline by the scripted local Messages API (plan
 * mode needs Claude Code). Each round a `mode: "plan"` dispatch runs its planning agent and waits;
 * the bench then sends `approve` the way `gstack-dispatch answer` does (POST /v1/answer over the
 * service API's socket). The clock the goal is about starts when the answer is accepted: the
 * daemon has written it to the session's state (fsynced) and audited it, and logs
 * "<id>: approve for plan round N" (the API's 200 reply, which comes later, confirms it); it
 * stops when the resumed agent's process exists (the spawn returned its pid). Printed beside it,
 * labelled as such: the same from the moment the request was sent (the request's round trip and
 * the acceptance's own writes included). The baseline is a bare spawn of the same `claude`
 * binary to its `spawn` event, taken between rounds so both see the same machine.
 * BENCH_ANSWER_ROUNDS (default 15) sets the rounds; each runs Claude Code twice.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gstackLayout } from "@gstack/contracts";
import type { AgentStarter } from "@gstack/daemon-client";
import { apiRequest, reachDaemonApi, readState } from "@gstack/daemon-client";
import { scripted, startScriptedModel } from "@gstack/scripted-model";
import { Daemon } from "../src/daemon";
import { startRunnerAgent } from "../src/run/runner-agent";

const rounds = Number(process.env.BENCH_ANSWER_ROUNDS ?? 15);
const claude = join(import.meta.dirname, "..", "node_modules", ".bin", "claude");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const sorted = (values: number[]) => [...values].sort((a, b) => a - b);
const median = (values: number[]) => sorted(values)[Math.floor(values.length / 2)] ?? 0;
const p95 = (values: number[]) => sorted(values)[Math.ceil(values.length * 0.95) - 1] ?? 0;
const format = (ms: number) => `${ms.toFixed(2)} ms`;

/** A bare spawn of the agent, to its `spawn` event (it is let run to its end, untimed). */
function bareSpawn(): Promise<number> {
  return new Promise((resolve, reject) => {
    const begin = performance.now();
    let started = 0;
    const child = spawn(claude, ["--version"], { stdio: "ignore", detached: true });
    child.on("spawn", () => {
      started = performance.now() - begin;
    });
    child.on("error", reject);
    child.on("exit", () => resolve(started));
  });
}

export async function benchAnswerResume(): Promise<void> {
  const base = await mkdtemp(join(tmpdir(), "gstack-answer-bench-"));
  const home = join(base, "home");
  const model = await startScriptedModel({
    respond: (request) =>
      scripted.text(
        JSON.stringify(request.body).includes("approved your plan")
          ? "Done.\n\n## What shipped\n- nothing\n## Needs human judgment\n- None"
          : "## Plan\n1. Nothing to change.",
      ),
  });
  const saved = { ...process.env };
  // The agents the daemon starts inherit this environment: Claude Code talks to the scripted model.
  Object.assign(process.env, model.claudeEnv(home), { CLAUDE_CODE_MAX_RETRIES: "0" });
  try {
    await mkdir(home);
    const repo = join(base, "repo");
    await mkdir(repo);
    execFileSync("git", ["init", "-q", "-b", "main", repo]);
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
    // Every start of an agent, per dispatch: the plan run first, the resumed run second.
    const starts = new Map<string, number[]>();
    const recording: AgentStarter = (options) => {
      const started = startRunnerAgent(options);
      const id = String(options.env?.GSTACK_DISPATCH_ID);
      starts.set(id, [...(starts.get(id) ?? []), performance.now()]);
      return started;
    };
    // When each dispatch's answer was accepted (the daemon's log line written right after).
    const accepted = new Map<string, number>();
    const daemon = new Daemon({
      root: layout.root,
      log: (line) => {
        const answered = /^(dispatch-answer-\d+): approve for plan round \d+$/.exec(line);
        if (answered?.[1]) accepted.set(answered[1], performance.now());
      },
      claudeBinary: claude,
      startAgent: recording,
      openclawWorkspace: false,
      settings: { trusted_repos: [base], max_concurrent: 1, agents: { claude: { command: [claude] } } },
    });
    await daemon.start();
    const api = await reachDaemonApi(layout);
    if (!api) throw new Error("the daemon's service API did not come up");
    const resumed: number[] = [];
    const fromSent: number[] = [];
    const roundTrips: number[] = [];
    const bare: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const id = `dispatch-answer-${round}`;
      const temporary = join(layout.dispatch.tmp, `${id}.json`);
      await writeFile(
        temporary,
        JSON.stringify({
          id,
          dispatched_by: "bench",
          task: "nothing",
          project: "bench",
          project_dir: repo,
          target_agent: "claude",
          mode: "plan",
        }),
      );
      await rename(temporary, join(layout.dispatch.incoming, `${id}.json`));
      for (
        let state = await readState(layout, id);
        state?.status !== "awaiting";
        state = await readState(layout, id)
      ) {
        if (state?.status === "finished") throw new Error(`${id} ended instead of waiting with its plan`);
        await sleep(2);
      }
      await daemon.idle();
      bare.push(await bareSpawn());
      const sentAt = performance.now();
      const response = await apiRequest(api, "POST", "/v1/answer", {
        body: JSON.stringify({ dispatch_id: id, answer: "approve" }),
      });
      roundTrips.push(performance.now() - sentAt);
      if (response.status !== 200)
        throw new Error(`the answer was refused: ${JSON.stringify(response.body)}`);
      while ((starts.get(id)?.length ?? 0) < 2) await sleep(1);
      const acceptedAt = accepted.get(id);
      if (acceptedAt === undefined) throw new Error(`the daemon did not log accepting the answer to ${id}`);
      const startedAt = starts.get(id)?.[1] as number;
      resumed.push(startedAt - acceptedAt);
      fromSent.push(startedAt - sentAt);
      while (!existsSync(layout.dispatch.completedJson(id))) await sleep(2);
      await daemon.idle();
    }
    await daemon.stop(0);
    const spawnTime = median(bare);
    const ratio = (values: number[]) => `${(median(values) / spawnTime).toFixed(2)}×`;
    console.log(
      [
        `answer → resumed agent start, over ${rounds} rounds; bare spawn of the agent: median ${format(spawnTime)}, p95 ${format(p95(bare))}`,
        `  from the accepted answer (the goal, ≤ 3×): median ${format(median(resumed))} = ${ratio(resumed)} a bare spawn; p95 ${format(p95(resumed))}`,
        `  from sending the answer (its request and acceptance writes included): median ${format(median(fromSent))} = ${ratio(fromSent)}; p95 ${format(p95(fromSent))}`,
        `  the answer's round trip (sent → 200 reply): median ${format(median(roundTrips))}, p95 ${format(p95(roundTrips))}`,
      ].join("\n"),
    );
  } finally {
    process.env = saved;
    await model.close();
    await rm(base, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchAnswerResume();
