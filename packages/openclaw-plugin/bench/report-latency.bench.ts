/**
 * How long a completion takes to reach its OpenClaw session, through the real gateway with the
 * packed plugin installed, as a ratio against a baseline in the same run:
 *   report     from a completion renamed into `dispatch/completed/` (with the daemon's record of
 *              the dispatch, as the daemon writes both) to the agent's model request holding it
 *   baseline   from starting `openclaw agent --session-key … --message …` (a person's message
 *              from OpenClaw's own CLI, start-up included) to the model request of that turn
 * BENCH_ROUNDS (default 5) of each, after one of each not counted: all reports first, then the CLI
 * turns, each round starting once the previous round's turn ended. The plugin must be built first
 * (`pnpm run build`).
 */
import { mkdir, mkdtemp, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startScriptedModel } from "@gstack/scripted-model";
import { newestUserText, openclawAgentResponder } from "../src/openclaw-scripts";
import {
  installPlugin,
  makeGstackWorld,
  makeOpenClawHome,
  openclawAgentCli,
  packPlugin,
  scriptedOpenClawConfig,
  startOpenClawGateway,
} from "../src/openclaw-world";

const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const SESSION = "agent:main:main";

const seen = new Map<string, number>();
const model = await startScriptedModel({
  respond: (request) => {
    const text = newestUserText(request);
    for (const match of text.matchAll(/BENCH-[A-Z]+-\d+/g))
      if (!seen.has(match[0])) seen.set(match[0], performance.now());
    return openclawAgentResponder(request);
  },
});
const scratch = await mkdtemp(join(tmpdir(), "gstack-latency-bench-"));
const world = await makeGstackWorld();
const config = scriptedOpenClawConfig(model, { gstackHome: world.root });
const home = await makeOpenClawHome(config);
await installPlugin(home, await packPlugin(join(scratch, "pack")));
const gateway = await startOpenClawGateway({ home: home.home });

const arrival = async (needle: string): Promise<number> => {
  for (;;) {
    const at = seen.get(needle);
    if (at !== undefined) return at;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

/** Waits until the plugin recorded the report as seen, so the next round starts from an idle session. */
const delivered = async (id: string) => {
  const path = join(home.stateDir, "gstack", "delivered", `${id}.json`);
  for (;;) {
    if (
      await stat(path).then(
        () => true,
        () => false,
      )
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
};

async function report(round: number): Promise<number> {
  const id = `dispatch-20260101T000000-bench${String(round).padStart(3, "0")}`;
  const needle = `BENCH-REPORT-${round}`;
  await mkdir(world.layout.dispatch.sessionDir(id), { recursive: true });
  await writeFile(join(world.layout.dispatch.sessionDir(id), "state.json"), JSON.stringify({ id }));
  await mkdir(world.layout.dispatch.completed, { recursive: true });
  await writeFile(world.layout.dispatch.completedReport(id), `# Bench\n\n## What shipped\n\n- ${needle}\n`);
  const hidden = join(world.layout.dispatch.completed, `.${id}.json.tmp`);
  await writeFile(
    hidden,
    JSON.stringify({
      dispatch_id: id,
      status: "completed",
      duration: 1,
      commits: 1,
      reply_to: { runtime: "openclaw", session_key: SESSION },
    }),
  );
  const start = performance.now();
  await rename(hidden, world.layout.dispatch.completedJson(id));
  const took = (await arrival(needle)) - start;
  await delivered(id);
  return took;
}

async function baseline(round: number): Promise<number> {
  const needle = `BENCH-CLI-${round}`;
  const start = performance.now();
  // The CLI returns once its turn ended, so the next round starts from an idle gateway.
  const turn = openclawAgentCli(home, gateway, "agent:main:bench", `A note ${needle}`);
  const took = (await arrival(needle)) - start;
  const finished = await turn;
  if (finished.code !== 0) throw new Error(`openclaw agent failed: ${finished.stderr}`);
  return took;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

try {
  const reports: number[] = [];
  const baselines: number[] = [];
  // Reports first, each one after the previous report's turn ended and was recorded; then the
  // CLI turns, each after the previous one ended. Round 0 of each warms up and is not counted.
  for (let round = 0; round <= rounds; round += 1) {
    const reportMs = await report(round);
    if (round > 0) reports.push(reportMs);
  }
  for (let round = 0; round <= rounds; round += 1) {
    const baselineMs = await baseline(round);
    if (round > 0) baselines.push(baselineMs);
  }
  const reportMedian = median(reports);
  const baselineMedian = median(baselines);
  console.log(
    `completion to report in the session: median ${reportMedian.toFixed(0)} ms = ${(reportMedian / baselineMedian).toFixed(2)}× an \`openclaw agent\` message reaching the model (${baselineMedian.toFixed(0)} ms); ${rounds} rounds: ${reports.map((value) => value.toFixed(0)).join(", ")} ms`,
  );
} finally {
  await gateway.stop();
  await model.close();
  await home.remove();
  await world.remove();
  await rm(scratch, { recursive: true, force: true });
}
