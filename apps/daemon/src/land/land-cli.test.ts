import { execFile, execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import type { Daemon } from "../daemon";
import { submitDispatch } from "../submit";
import {
  completionOf,
  dispatchFor,
  makeWorld,
  type TestWorld,
  testDaemon,
  trustInConfig,
  waitFor,
} from "../test-support";

const cli = join(import.meta.dirname, "..", "cli.ts");
let world: TestWorld;
let daemon: Daemon | undefined;
const git = (...args: string[]) =>
  execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8" }).trim();

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", cli, ...args, "--root", world.root],
      { cwd: join(import.meta.dirname, "..", "..") },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

beforeEach(async () => {
  world = await makeWorld();
  await trustInConfig(world);
  daemon = testDaemon(world);
  await daemon.start();
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
});

async function finished(id: string) {
  await submitDispatch(world.layout, dispatchFor(world, id, "commit a.txt"));
  await waitFor(() => completionOf(world.layout, id), 30_000);
}

describe("gstack-dispatch land and discard", { timeout: loadBudget(60_000) }, () => {
  it("land refuses a dirty checkout in one line with a non-zero exit, then lands once it is clean", async () => {
    await finished("dispatch-cli-land");
    await writeFile(join(world.repo, "untracked-is-fine.txt"), "x");
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "moved on");
    await writeFile(join(world.repo, ".gitignore"), "x\n");
    git("add", ".gitignore");
    const refused = await runCli(["land", "dispatch-cli-land"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /^gstack-dispatch: main is checked out in .* with uncommitted changes \(\.gitignore\)/,
    );
    git("reset", "-q", "--hard");
    const landed = await runCli(["land", "dispatch-cli-land"]);
    expect(landed).toMatchObject({ code: 0 });
    expect(landed.stdout).toMatch(
      /^dispatch-cli-land: landed gstack\/dispatch-cli-land into main \(merge\) at [0-9a-f]{12}\n$/,
    );
    expect(git("log", "-1", "--format=%s", "main")).toBe("Merge gstack/dispatch-cli-land into main");
  });

  it("discard needs --force for work never landed", async () => {
    await finished("dispatch-cli-discard");
    const refused = await runCli(["discard", "dispatch-cli-discard"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("discard --force throws it away");
    const discarded = await runCli(["discard", "dispatch-cli-discard", "--force"]);
    expect(discarded).toMatchObject({ code: 0 });
    expect(discarded.stdout).toContain("discarded: gstack/dispatch-cli-discard and its worktree are gone");
  });
});
