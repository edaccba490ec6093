import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../daemon";
import {
  auditOf,
  dispatchFor,
  initRepository,
  makeWorld,
  repositorySnapshot,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";

let world: TestWorld;
let outside: string;
let victim: string;
let daemon: Daemon | undefined;

beforeEach(async () => {
  world = await makeWorld();
  // A repository nobody trusts, with a worktree of its own, outside the world's trusted folder.
  outside = await realpath(await mkdtemp(join(tmpdir(), "gstack-untrusted-")));
  victim = join(outside, "repo");
  initRepository(victim);
  execFileSync("git", ["-C", victim, "worktree", "add", "-q", "-b", "side", join(outside, "side")]);
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
  await rm(outside, { recursive: true, force: true });
});

/** A folder inside the trusted one whose `.git` file says `gitdir: <target>`. */
async function pointingFolder(name: string, target: string): Promise<string> {
  const folder = join(await realpath(world.base), name);
  await mkdir(folder);
  await writeFile(join(folder, ".git"), `gitdir: ${target}\n`);
  return folder;
}

async function worktreesMade(): Promise<string[]> {
  return readdir(join(world.root, "worktrees"), { recursive: true }).catch(() => [] as string[]);
}

describe("intake: trust follows the repository a folder belongs to", () => {
  it("refuses a dropped dispatch whose trusted folder's .git file points into an untrusted repository: no worktree, nothing written there", async () => {
    const app = await pointingFolder("app", join(victim, ".git", "worktrees", "side"));
    const before = await repositorySnapshot(victim);
    daemon = testDaemon(world);
    await daemon.start();
    await submitDispatch(
      world.layout,
      dispatchFor(world, "dispatch-walked-around", "commit a.txt", { project_dir: app }),
    );
    const rejected = await waitFor(() =>
      auditOf(world.layout).then((events) =>
        events.find((event) => event.event === "rejected" && event.dispatch_id === "dispatch-walked-around"),
      ),
    );
    expect(String(rejected.reason)).toContain(`project_dir ${app} belongs to the git repository ${victim}`);
    const reason = JSON.parse(
      await readFile(join(world.layout.dispatch.rejected, "dispatch-walked-around.reason.json"), "utf8"),
    ) as { rule: string; reason: string };
    expect(reason.rule).toBe("trusted-repos");
    expect(reason.reason).toContain(`its .git file ${join(app, ".git")} points to`);
    expect(reason.reason).toContain(`add ${victim} to dispatch.trusted_repos in config.yaml`);
    // Handled as every refusal is: the file kept in rejected/, never queued, the daemon running on.
    expect(await readdir(world.layout.dispatch.rejected)).toContain("dispatch-walked-around.json");
    expect((await auditOf(world.layout)).some((event) => event.event === "queued")).toBe(false);
    expect(await worktreesMade()).toEqual([]);
    expect(await repositorySnapshot(victim)).toEqual(before);
    // The daemon goes on taking work.
    const next = await daemon.offer(JSON.stringify(dispatchFor(world, "dispatch-next", "noop")), {
      source: "test",
    });
    expect(next).toMatchObject({ accepted: true });
  });

  it("refuses an offered dispatch whose folder's .git file points straight at an untrusted repository's git folder", async () => {
    const app = await pointingFolder("direct", join(victim, ".git"));
    const before = await repositorySnapshot(victim);
    daemon = testDaemon(world);
    await daemon.start();
    const verdict = await daemon.offer(
      JSON.stringify(dispatchFor(world, "dispatch-direct", "commit a.txt", { project_dir: app })),
      { source: "test" },
    );
    expect(verdict).toMatchObject({ accepted: false, rule: "trusted-repos", id: "dispatch-direct" });
    if (!verdict.accepted) {
      expect(verdict.reason).toContain(`belongs to the git repository ${victim}`);
      expect(verdict.reason).toContain(`its git folder ${join(victim, ".git")}`);
    }
    expect(await worktreesMade()).toEqual([]);
    expect(await repositorySnapshot(victim)).toEqual(before);
  });

  it("takes a dispatch for a linked worktree of a trusted repository", async () => {
    execFileSync("git", [
      "-C",
      world.repo,
      "worktree",
      "add",
      "-q",
      "-b",
      "topic",
      join(world.base, "repo-topic"),
    ]);
    daemon = testDaemon(world);
    await daemon.start();
    const verdict = await daemon.offer(
      JSON.stringify(
        dispatchFor(world, "dispatch-linked", "commit a.txt", {
          project_dir: join(world.base, "repo-topic"),
        }),
      ),
      { source: "test" },
    );
    expect(verdict).toMatchObject({ accepted: true, id: "dispatch-linked" });
  });
});
