import { execFileSync } from "node:child_process";
import { appendFile, mkdir, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { formatStatus, readState, readStatus, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import type { Daemon } from "../daemon";
import { canMountTmpfs, fill } from "../run/tmpfs-test-support";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";

const mountable = canMountTmpfs();
if (!mountable) {
  console.log("worktree disk-full test skipped: a tmpfs cannot be mounted here (it needs root on Linux)");
}

let world: TestWorld;
let daemon: Daemon | undefined;
let mounted = false;
const git = (...args: string[]) =>
  execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8" }).trim();
const worktreeCount = () => git("worktree", "list", "--porcelain").match(/^worktree /gm)?.length ?? 0;

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  if (mounted) execFileSync("umount", [world.root]);
  mounted = false;
  await world.cleanup();
});

describe.skipIf(!mountable)(
  "a full disk while a dispatch's worktree is made",
  { timeout: loadBudget(120_000) },
  () => {
    it("says 'disk full', leaves nothing behind, and runs the dispatch once in one worktree when room returns", async () => {
      // A checkout of a megabyte: the state files fit in what is left, the worktree does not.
      await writeFile(join(world.repo, "big.bin"), Buffer.alloc(1024 * 1024, 7));
      git("add", "big.bin");
      git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "big file");
      await mkdir(world.root, { recursive: true });
      execFileSync("mount", ["-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", world.root]);
      mounted = true;
      const runs = join(world.base, "runs.log");
      const agent = join(world.base, "recording-agent.cjs");
      await appendFile(
        agent,
        `require("node:fs").appendFileSync(${JSON.stringify(runs)}, process.env.GSTACK_DISPATCH_ID + " " + process.cwd() + "\\n");
${await readFile(world.agentScript, "utf8")}`,
      );
      const lines: string[] = [];
      daemon = testDaemon(
        world,
        { log: (line) => lines.push(line) },
        { heartbeat_seconds: 1, agents: { codex: { command: [process.execPath, agent, "{prompt}"] } } },
      );
      await daemon.start();
      // Full, then 40 KiB freed: room for the dispatch's own small files, not for its checkout
      // (nor for the daemon's 64 KiB probe, so the disk stays "full" until the filler goes).
      const filler = join(world.root, "filler");
      await fill(filler);
      await truncate(filler, (await stat(filler)).size - 40 * 1024);
      const id = "dispatch-worktree-full";
      await submitDispatch(world.layout, dispatchFor(world, id, "commit a.txt"));

      const full = await waitFor(async () => {
        const text = formatStatus(await readStatus(world.layout));
        return /disk full: 1 queued/.test(text) ? text : undefined;
      }, 60_000);
      expect(full).toMatch(/^daemon running/);
      expect(
        lines.filter((line) => line.startsWith(`disk full: starting ${id} failed (ENOSPC)`)),
      ).toHaveLength(1);
      expect(lines.filter((line) => line.startsWith("could not start"))).toEqual([]);
      // Nothing half made: no folder, no entry in git's list, no branch, no run.
      const planned = await waitFor(async () => (await readState(world.layout, id))?.worktree);
      expect(await readdir(join(planned.path, "..")).catch(() => [])).toEqual([]);
      expect(worktreeCount()).toBe(1);
      expect(git("branch", "--list", planned.branch)).toBe("");
      expect(await completionOf(world.layout, id)).toBeUndefined();
      expect(await readFile(runs, "utf8").catch(() => "")).toBe("");

      await rm(filler);
      const completion = await waitFor(() => completionOf(world.layout, id), 60_000);
      expect(completion).toMatchObject({ status: "completed", commits: 1, worktree: planned.path });
      expect(lines.filter((line) => line.startsWith("disk has room again"))).toHaveLength(1);
      expect((await readFile(runs, "utf8")).trim().split("\n")).toEqual([`${id} ${planned.cwd}`]);
      expect(worktreeCount()).toBe(2);
      expect(git("-C", planned.path, "rev-parse", "--abbrev-ref", "HEAD")).toBe(planned.branch);
      const made = (await auditOf(world.layout)).filter(
        (event) => event.event === "worktree_created" && event.dispatch_id === id,
      );
      expect(made).toHaveLength(1);
      expect(formatStatus(await readStatus(world.layout))).not.toContain("disk full");
    });
  },
);
