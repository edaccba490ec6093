import { execFile, execFileSync } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { apiRequest, reachDaemonApi, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import type { Daemon } from "../daemon";
import {
  completionOf,
  dispatchCommand,
  dispatchFor,
  makeWorld,
  type TestWorld,
  testDaemon,
  trustInConfig,
  waitFor,
} from "../test-support";

let world: TestWorld;
let daemon: Daemon | undefined;
const git = (...args: string[]) =>
  execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8" }).trim();

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...dispatchCommand(), ...args, "--root", world.root],
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

async function finished(id: string, task = "commit a.txt") {
  await submitDispatch(world.layout, dispatchFor(world, id, task));
  return waitFor(() => completionOf(world.layout, id), 30_000);
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

  it("a failed dispatch with no commits: status offers only discard, land refuses in words (CLI and service API), discard removes it", async () => {
    const empty = "dispatch-cli-empty";
    const worked = "dispatch-cli-worked";
    expect(await finished(empty, "fail")).toMatchObject({ status: "failed", commits: 0, landing: "nothing" });
    expect(await finished(worked, "commit-then-fail worked.txt")).toMatchObject({
      status: "failed",
      commits: 1,
      landing: "awaiting",
    });
    // status: the one that committed awaits landing, the empty one is listed for discard only.
    const status = await runCli(["status"]);
    expect(status.code).toBe(0);
    const lines = status.stdout.split("\n");
    const landings = lines.findIndex((line) => line.startsWith("1 awaiting landing"));
    const nothing = lines.findIndex((line) => line.startsWith("1 with nothing to land"));
    expect(landings).toBeGreaterThanOrEqual(0);
    expect(lines[landings + 1]).toMatch(new RegExp(`^  ⏸ ${worked}  acme-widget  gstack/${worked} → main`));
    expect(nothing).toBeGreaterThan(landings);
    expect(lines[nothing]).toContain("gstack-dispatch discard <id> removes the worktree");
    expect(lines[nothing + 1]).toMatch(new RegExp(`^  ∅ ${empty}  acme-widget  gstack/${empty}  `));
    expect(lines.filter((line) => line.includes(empty))).toHaveLength(2); // its row, and its recent ending
    // land refuses in words, with a non-zero exit, changing nothing.
    const main = git("rev-parse", "main");
    const refused = await runCli(["land", empty]);
    expect(refused).toMatchObject({ code: 1, stdout: "" });
    expect(refused.stderr).toBe(
      `gstack-dispatch: nothing to land: the branch gstack/${empty} has no commits beyond main; discard removes its worktree and branch\n`,
    );
    // The same refusal through the service API (what the plugin's gstack_land calls).
    const api = await reachDaemonApi(world.layout);
    if (!api) throw new Error("the service API does not answer");
    const viaApi = await apiRequest(api, "POST", "/v1/land", {
      body: JSON.stringify({ dispatch_id: empty, action: "land" }),
    });
    expect(viaApi.status).toBe(409);
    expect(viaApi.body).toMatchObject({
      error: "land_refused",
      rule: "nothing",
      dispatch_id: empty,
      message: `nothing to land: the branch gstack/${empty} has no commits beyond main; discard removes its worktree and branch`,
    });
    expect(git("rev-parse", "main")).toBe(main);
    // discard needs no --force and removes it; the failed one with work still lands.
    const discarded = await runCli(["discard", empty]);
    expect(discarded).toMatchObject({ code: 0 });
    expect(discarded.stdout).toBe(`${empty}: discarded: gstack/${empty} and its worktree are gone\n`);
    const landed = await runCli(["land", worked]);
    expect(landed).toMatchObject({ code: 0 });
    expect(landed.stdout).toMatch(
      new RegExp(`^${worked}: landed gstack/${worked} into main \\(fast-forward\\)`),
    );
    expect(git("log", "-1", "--format=%s", "main")).toBe("add worked.txt");
    const after = await runCli(["status"]);
    expect(after.stdout).not.toContain("awaiting landing");
    expect(after.stdout).not.toContain("nothing to land");
  });
});
