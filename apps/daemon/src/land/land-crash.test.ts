import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../daemon";
import { submitDispatch } from "../submit";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";
import { materializeWorktree, planWorktree } from "../worktree/worktree";
import { landDispatch } from "./land";

let world: TestWorld;
let daemon: Daemon | undefined;
const git = (...args: string[]) =>
  execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8" }).trim();
const worktrees = () => git("worktree", "list", "--porcelain").match(/^worktree /gm)?.length ?? 0;
const module = (path: string) =>
  JSON.stringify(pathToFileURL(join(import.meta.dirname, "..", "..", path)).href);

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
});

/**
 * Runs `action` in a child process once it is loaded, and kills it (and what it started) with
 * SIGKILL `delayMs` after telling it to go (or lets it finish, when it is quicker).
 */
async function killedDuring(imports: string, action: string, delayMs: number): Promise<void> {
  const script = join(world.base, `crash-${Math.random().toString(36).slice(2)}.mts`);
  await writeFile(
    script,
    `${imports}\nprocess.stdout.write("ready\\n");\nprocess.stdin.once("data", async () => {\n${action}\nprocess.exit(0);\n});\n`,
  );
  const child: ChildProcess = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: join(import.meta.dirname, "..", ".."),
    stdio: ["pipe", "pipe", "inherit"],
    // Its own process group, so the kill takes the git it started too, as a crash of the
    // daemon's service would.
    detached: true,
  });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  const ready = await Promise.race([
    new Promise<boolean>((resolve) => child.stdout?.once("data", () => resolve(true))),
    exited.then(() => false),
  ]);
  if (!ready) throw new Error("the child process ended before it was ready");
  child.stdin?.write("go\n");
  await new Promise((resolve) => setTimeout(resolve, delayMs));
  try {
    process.kill(-(child.pid as number), "SIGKILL");
  } catch {}
  await exited;
}

const DELAYS = [0, 3, 8, 15, 30, 60, 120];

describe("kill -9 at random moments", { timeout: 120_000 }, () => {
  it("while a worktree is made: made again, one worktree, on its branch", async () => {
    // Enough files that making the worktree takes a while.
    for (let folder = 0; folder < 20; folder += 1) {
      await mkdir(join(world.repo, `d${folder}`));
      for (let file = 0; file < 50; file += 1)
        await writeFile(join(world.repo, `d${folder}`, `f${file}`), `${file}\n`);
    }
    git("add", "-A");
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "files");
    for (const [round, delay] of DELAYS.entries()) {
      const planned = await planWorktree({
        stateRoot: world.root,
        project: "acme",
        dispatchId: `dispatch-make-${round}`,
        projectDir: world.repo,
        now: new Date(),
      });
      await killedDuring(
        `import { materializeWorktree } from ${module("src/worktree/worktree.ts")};`,
        `await materializeWorktree(${JSON.stringify(planned)});`,
        delay,
      );
      await materializeWorktree(planned);
      expect(git("-C", planned.path, "rev-parse", "--abbrev-ref", "HEAD")).toBe(planned.branch);
      expect(git("-C", planned.path, "status", "--porcelain")).toBe("");
      expect(worktrees()).toBe(round + 2);
    }
    expect((await readdir(join(world.root, "worktrees", "acme"))).length).toBe(DELAYS.length);
  });

  it("while a branch is landed: landed once, nothing left behind", async () => {
    daemon = testDaemon(world);
    await daemon.start();
    for (const [round, delay] of DELAYS.entries()) {
      const id = `dispatch-crash-land-${round}`;
      await submitDispatch(world.layout, dispatchFor(world, id, `commit f-${round}.txt`));
      await waitFor(() => completionOf(world.layout, id), 30_000);
      await waitFor(async () =>
        (await readdir(world.layout.dispatch.sessionDir(id))).includes("state.json") ? true : undefined,
      );
      // The base moves on every other round, so both fast-forwards and merges are cut short.
      if (round % 2 === 1)
        git(
          "-c",
          "user.name=t",
          "-c",
          "user.email=t@t",
          "commit",
          "-q",
          "--allow-empty",
          "-m",
          `moved ${round}`,
        );
      const tip = git("rev-parse", `gstack/${id}`);
      await killedDuring(
        `import { landDispatch } from ${module("src/land/land.ts")};\nimport { gstackLayout } from ${module("node_modules/@gstack/contracts/dist/index.js")};`,
        `await landDispatch(gstackLayout(${JSON.stringify(world.root)}), ${JSON.stringify(id)});`,
        delay,
      );
      const answer = await landDispatch(world.layout, id);
      expect(answer.landing).toBe("landed");
      expect(execFileSync("git", ["-C", world.repo, "merge-base", "--is-ancestor", tip, "main"]).length).toBe(
        0,
      );
      expect(git("status", "--porcelain")).toBe("");
      expect(worktrees()).toBe(1);
      expect(git("branch", "--list", `gstack/${id}`)).toBe("");
      const landed = (await auditOf(world.layout)).filter(
        (event) => event.event === "landed" && event.dispatch_id === id,
      );
      expect(landed).toHaveLength(1);
      expect(await completionOf(world.layout, id)).toMatchObject({ landing: "landed" });
    }
  });
});
