import { execFileSync } from "node:child_process";
import { existsSync, type FSWatcher, watch } from "node:fs";
import { join } from "node:path";
import { landDispatch, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { fastCheckSeed } from "../../../../vitest.seed";
import type { Daemon } from "../daemon";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  type TestWorld,
  testDaemon,
  trustInConfig,
  waitFor,
} from "../test-support";
import {
  alternatingCommits,
  checkoutState,
  killedState,
  landingChild,
  manyFileChange,
  seeded,
} from "./kill-fixture";

/**
 * The landing under kill -9 at random moments, as a held-out fault suite tries it: each round
 * lands a dispatch whose branch changes every path of a many-file change (and a large file)
 * into the checked-out base, kills the landing's process group at a seeded random moment (most
 * rounds while it holds the checkout's index lock, the rest anywhere in the landing), and has
 * the next `land` (odd rounds) or the next daemon start (even rounds) take over. Every round
 * must end with the checkout exactly at the commit before or the one after: every file's mode
 * and bytes, no other file or folder, git status clean, the index that commit's, no lock left.
 *
 * LAND_KILL_ROUNDS (default 6), LAND_KILL_FILES (default 300), LAND_KILL_LARGE_BYTES (default
 * 2 MiB) and LAND_KILL_SEED (default the fast-check seed) set the run; the long run is
 * LAND_KILL_ROUNDS=24 LAND_KILL_FILES=1000 LAND_KILL_LARGE_BYTES=33554432.
 */
const ROUNDS = Number(process.env.LAND_KILL_ROUNDS ?? 6);
const FILES = Number(process.env.LAND_KILL_FILES ?? 300);
const LARGE = Number(process.env.LAND_KILL_LARGE_BYTES ?? 2 * 1024 * 1024);
const SEED = Number(process.env.LAND_KILL_SEED ?? fastCheckSeed());

let world: TestWorld;
let daemon: Daemon | undefined;
const git = (...args: string[]) =>
  execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8", maxBuffer: 1 << 28 }).trim();

beforeEach(async () => {
  world = await makeWorld();
  // What `land` outside the daemon reads: this world's repository is trusted.
  await trustInConfig(world);
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
});

/** When the checkout's index lock appears and goes, as they happen (the folder watched). */
function watchIndexLock(gitDir: string) {
  let appeared: number | undefined;
  let gone: number | undefined;
  let wake: (() => void) | undefined;
  const watcher: FSWatcher = watch(gitDir, (_event, name) => {
    if (name !== "index.lock") return;
    const there = existsSync(join(gitDir, "index.lock"));
    if (there && appeared === undefined) {
      appeared = performance.now();
      wake?.();
    } else if (!there && appeared !== undefined && gone === undefined) gone = performance.now();
  });
  return {
    /** Resolves when the lock appears (or at once if it has). */
    appeared: () =>
      new Promise<void>((resolve) => {
        if (appeared !== undefined) resolve();
        else wake = resolve;
      }),
    window: () => (appeared !== undefined && gone !== undefined ? gone - appeared : undefined),
    close: () => watcher.close(),
  };
}

it(`kill -9 at random moments, ${ROUNDS} rounds of ${FILES} files: each round ends at the old or the new checkout, byte for byte`, {
  timeout: loadBudget(120_000 + ROUNDS * (30_000 + FILES * 40)),
}, async () => {
  console.log(
    `land kill loop: seed ${SEED} (LAND_KILL_SEED), ${ROUNDS} rounds (LAND_KILL_ROUNDS), ${FILES} files (LAND_KILL_FILES), a ${LARGE}-byte file (LAND_KILL_LARGE_BYTES)`,
  );
  const random = seeded(SEED);
  const { before, after } = await manyFileChange(world.repo, { files: FILES, seed: SEED, largeBytes: LARGE });
  const chain = alternatingCommits(world.repo, before, [before, after], ROUNDS + 1);
  const ids = chain.map((_, round) => `dispatch-kill-${round}`);
  daemon = testDaemon(world);
  await daemon.start();
  for (const [round, id] of ids.entries()) {
    git("branch", `round-${round}`, chain[round] as string);
    await submitDispatch(
      world.layout,
      dispatchFor(world, id, "report", { branch: `round-${round}`, base: "main" }),
    );
  }
  for (const id of ids) await waitFor(() => completionOf(world.layout, id), 120_000 + FILES * 100);
  await daemon.stop();
  daemon = undefined;

  // Round 0, not killed: how long a landing takes, and how long it holds the index lock.
  const calibration = watchIndexLock(join(world.repo, ".git"));
  const first = await landingChild(world.base, world.root, ids[0] as string);
  const began = first.go();
  expect((await first.exited).code, first.stderr()).toBe(0);
  const whole = performance.now() - began;
  const window = calibration.window() ?? whole;
  calibration.close();
  expect(checkoutState(world.repo, [chain[0] as string])).toBe(`at ${chain[0]}`);

  const rounds: string[] = [];
  let cutWhileWriting = 0;
  for (let round = 1; round <= ROUNDS; round += 1) {
    const id = ids[round] as string;
    const old = chain[round - 1] as string;
    const next = chain[round] as string;
    const inWindow = random() < 0.7;
    const delay = random() * 1.2 * (inWindow ? window : whole);
    const lock = watchIndexLock(join(world.repo, ".git"));
    const landing = await landingChild(world.base, world.root, id);
    let killed = false;
    landing.go();
    const ended = landing.exited.then(() => "ended" as const);
    if (!inWindow || (await Promise.race([lock.appeared().then(() => "lock" as const), ended])) === "lock") {
      const timer = new Promise<"timer">((resolve) => setTimeout(() => resolve("timer"), delay));
      if ((await Promise.race([timer, ended])) === "timer") {
        landing.kill();
        killed = true;
      }
    }
    await landing.exited;
    lock.close();
    const cut = killedState(world.repo, old, next);
    const lockLeft = existsSync(join(world.repo, ".git", "index.lock"));
    if ((cut.after ?? 0) > 0 && (cut.before ?? 0) + (cut.hole ?? 0) + (cut.partial ?? 0) > 0)
      cutWhileWriting += 1;

    const by = round % 2 === 1 ? "land" : "start";
    const resumed = performance.now();
    if (by === "land") {
      expect(await landDispatch(world.layout, id)).toMatchObject({ landing: "landed", commit: next });
    } else {
      daemon = testDaemon(world);
      await daemon.start();
      // A stop waits for the landings the start finishes beside new work.
      await daemon.stop();
      daemon = undefined;
    }
    const took = performance.now() - resumed;
    const state = checkoutState(world.repo, [old, next]);
    expect([`at ${old}`, `at ${next}`]).toContain(state);
    const outcome = state === `at ${next}` ? "new" : "old";
    rounds.push(
      `round ${round}: ${killed ? `killed ${delay.toFixed(0)} ms after ${inWindow ? "the lock appeared" : "go"}` : "not killed (it ended first)"}; left ${JSON.stringify(cut)}${lockLeft ? ", the lock" : ""}; the next ${by} (${took.toFixed(0)} ms): ${outcome} checkout`,
    );
    if (outcome === "old") {
      // Nothing of it was left to finish (killed before its record): landed now, whole.
      expect(await landDispatch(world.layout, id)).toMatchObject({ landing: "landed", commit: next });
      expect(checkoutState(world.repo, [next])).toBe(`at ${next}`);
    }
    const landed = (await auditOf(world.layout)).filter(
      (event) => event.event === "landed" && event.dispatch_id === id,
    );
    expect(landed).toHaveLength(1);
  }
  console.log(
    [
      `land kill loop (seed ${SEED}): a landing takes ${whole.toFixed(0)} ms, ${window.toFixed(0)} ms of it holding the index lock; ${cutWhileWriting} of ${ROUNDS} rounds cut while git wrote the files`,
      ...rounds,
    ].join("\n"),
  );
});
