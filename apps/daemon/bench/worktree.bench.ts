/**
 * Worktree creation, as ratios measured in the same run on a repository of BENCH_WORKTREE_FILES
 * files (default 10,000):
 *   creation  the daemon's planWorktree + materializeWorktree, against a bare
 *             `git worktree add -b <branch> <path> HEAD` of the same repository, with 1 and with
 *             BENCH_WORKTREE_EXISTING (default 300) worktrees already registered (made with
 *             --no-checkout: git reads every worktree's record, whatever its files)
 *   parallel  BENCH_WORKTREE_PARALLEL (default 4) worktrees made at once in that repository,
 *             against as many made one after another
 *   pickup    rename into dispatch/ → agent start with the worktree made on the way, against a
 *             bare `git worktree add` plus a bare spawn
 * BENCH_WORKTREE_ROUNDS (default 10) sets how many of each; rounds alternate (and which of the
 * two goes first alternates) so both see the same machine. Each figure is printed with the load
 * average; BENCH_WORKTREE_ONLY=creation stops after the creation figures.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { gstackLayout } from "@gstack/contracts";
import type { AgentStarter } from "@gstack/daemon-client";
import { removeWorktree } from "@gstack/daemon-client";
import { loadLine } from "../../../scripts/bench-start-up";
import { Daemon } from "../src/daemon";
import { startRunnerAgent } from "../src/run/runner-agent";
import { materializeWorktree } from "../src/worktree/materialize";
import { planWorktree } from "../src/worktree/plan";

const files = Number(process.env.BENCH_WORKTREE_FILES ?? 10_000);
const rounds = Number(process.env.BENCH_WORKTREE_ROUNDS ?? 10);
const existing = Number(process.env.BENCH_WORKTREE_EXISTING ?? 300);
const parallel = Number(process.env.BENCH_WORKTREE_PARALLEL ?? 4);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const format = (ms: number) => `${ms.toFixed(1)} ms`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function bigRepository(base: string): Promise<string> {
  const repo = join(base, "repo");
  await mkdir(repo);
  execFileSync("git", ["init", "-q", "-b", "main", repo]);
  for (let folder = 0; folder < 100; folder += 1) {
    await mkdir(join(repo, `dir-${folder}`));
    const writes: Promise<void>[] = [];
    for (let file = 0; file < files / 100; file += 1) {
      writes.push(
        writeFile(join(repo, `dir-${folder}`, `file-${file}.txt`), `folder ${folder} file ${file}\n`),
      );
    }
    await Promise.all(writes);
  }
  execFileSync("git", ["-C", repo, "add", "-A"]);
  execFileSync("git", [
    "-C",
    repo,
    "-c",
    "user.name=b",
    "-c",
    "user.email=b@b",
    "commit",
    "-q",
    "-m",
    "files",
  ]);
  return repo;
}

function bareWorktreeAdd(repo: string, path: string, branch: string): number {
  const begin = performance.now();
  execFileSync("git", ["-C", repo, "worktree", "add", "--quiet", "-b", branch, path, "HEAD"]);
  return performance.now() - begin;
}

function bareSpawn(): Promise<number> {
  return new Promise((resolve, reject) => {
    const begin = performance.now();
    const child = spawn("/bin/true", [], { stdio: "ignore", detached: true });
    child.on("spawn", () => resolve(performance.now() - begin));
    child.on("error", reject);
  });
}

async function cleanUp(repo: string, path: string, branch: string) {
  await removeWorktree(repo, path);
  execFileSync("git", ["-C", repo, "branch", "-D", "-q", branch]);
}

export async function benchWorktrees(): Promise<void> {
  const base = await mkdtemp(join(tmpdir(), "gstack-worktree-bench-"));
  try {
    const repo = await bigRepository(base);
    const stateRoot = join(base, "state");
    const make = async (id: string) => {
      const planned = await planWorktree({
        stateRoot,
        project: "bench",
        dispatchId: id,
        projectDir: repo,
        now: new Date(),
      });
      await materializeWorktree(planned);
      return planned;
    };
    const creationRounds = async (label: string) => {
      const bare: number[] = [];
      const ours: number[] = [];
      const ourRound = async (round: number) => {
        const begin = performance.now();
        const planned = await make(`dispatch-bench-${round}`);
        ours.push(performance.now() - begin);
        await cleanUp(repo, planned.path, planned.branch);
      };
      const bareRound = async (round: number) => {
        const barePath = join(base, "bare", `w-${round}`);
        bare.push(bareWorktreeAdd(repo, barePath, `bench/bare-${round}`));
        await cleanUp(repo, barePath, `bench/bare-${round}`);
      };
      const loadBefore = loadLine();
      for (let round = 0; round < rounds; round += 1) {
        // Which goes first alternates, so neither always meets the files the other just freed.
        if (round % 2 === 0) {
          await bareRound(round);
          await ourRound(round);
        } else {
          await ourRound(round);
          await bareRound(round);
        }
      }
      const creation = median(ours);
      const baseline = median(bare);
      console.log(
        `worktree creation on ${files} files with ${label}, median of ${rounds}: ${format(creation)} = ${(creation / baseline).toFixed(2)}× a bare git worktree add (${format(baseline)}); load ${loadBefore} before, ${loadLine()} after`,
      );
    };
    await creationRounds("1 worktree (the checkout)");
    for (let index = 0; index < existing; index += 1) {
      execFileSync("git", [
        "-C",
        repo,
        "worktree",
        "add",
        "--quiet",
        "--no-checkout",
        "-b",
        `bench/filler-${index}`,
        join(base, "filler", `f-${index}`),
        "HEAD",
      ]);
    }
    await creationRounds(`${existing + 1} worktrees`);
    if (process.env.BENCH_WORKTREE_ONLY === "creation") return;

    // Several at once into the one repository, against the same number one after another.
    const oneByOne: number[] = [];
    const together: number[] = [];
    for (let round = 0; round < Math.max(3, Math.floor(rounds / 3)); round += 1) {
      const ids = (kind: string) =>
        Array.from({ length: parallel }, (_, index) => `dispatch-${kind}-${round}-${index}`);
      let begin = performance.now();
      const serial = [];
      for (const id of ids("serial")) serial.push(await make(id));
      oneByOne.push(performance.now() - begin);
      begin = performance.now();
      const side = await Promise.all(ids("side").map(make));
      together.push(performance.now() - begin);
      for (const planned of [...serial, ...side]) await cleanUp(repo, planned.path, planned.branch);
    }
    console.log(
      `${parallel} worktrees into one repository at once: ${format(median(together))} against ${format(median(oneByOne))} one after another (${(median(together) / median(oneByOne)).toFixed(2)}×)`,
    );

    // Pickup with the worktree made on the way to the agent.
    const layout = gstackLayout(stateRoot);
    const startedAt = new Map<string, number>();
    const recording: AgentStarter = (options) => {
      startedAt.set(String(options.env?.GSTACK_DISPATCH_ID), performance.now());
      return startRunnerAgent(options);
    };
    const daemon = new Daemon({
      root: stateRoot,
      claudeBinary: "/nonexistent/claude",
      startAgent: recording,
      openclawWorkspace: false,
      settings: { trusted_repos: [base], max_concurrent: 1, agents: { codex: { command: ["/bin/true"] } } },
    });
    await daemon.start();
    const pickups: number[] = [];
    const bareBoth: number[] = [];
    for (let round = 0; round < rounds; round += 1) {
      const barePath = join(base, "bare", `p-${round}`);
      const added = bareWorktreeAdd(repo, barePath, `bench/bare-p-${round}`);
      bareBoth.push(added + (await bareSpawn()));
      await cleanUp(repo, barePath, `bench/bare-p-${round}`);
      const id = `dispatch-pickup-${round}`;
      const temporary = join(layout.dispatch.tmp, `${id}.json`);
      await writeFile(
        temporary,
        JSON.stringify({
          id,
          dispatched_by: "bench",
          task: "nothing",
          project: "bench",
          project_dir: repo,
          target_agent: "codex",
        }),
      );
      const renamedAt = performance.now();
      await rename(temporary, join(layout.dispatch.incoming, `${id}.json`));
      while (!startedAt.has(id)) await sleep(1);
      pickups.push((startedAt.get(id) as number) - renamedAt);
      while (!existsSync(layout.dispatch.completedJson(id))) await sleep(2);
      await daemon.idle();
    }
    await daemon.stop(0);
    const pickup = median(pickups);
    const bareline = median(bareBoth);
    console.log(
      `pickup with its worktree (rename → agent start), median of ${rounds}: ${format(pickup)} = ${(pickup / bareline).toFixed(2)}× a bare git worktree add plus a bare spawn (${format(bareline)})`,
    );
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await benchWorktrees();
