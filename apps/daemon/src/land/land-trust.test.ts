import { execFile, execFileSync } from "node:child_process";
import { mkdtemp, readFile, realpath, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  apiRequest,
  discardDispatch,
  LandRefusal,
  landDispatch,
  reachDaemonApi,
  submitDispatch,
} from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { Daemon } from "../daemon";
import {
  completionOf,
  dispatchCommand,
  dispatchFor,
  initRepository,
  makeWorld,
  repositorySnapshot,
  type TestWorld,
  testDaemon,
  trustInConfig,
  waitFor,
} from "../test-support";

let world: TestWorld;
let base: string;
let outside: string;
let victim: string;
let daemon: Daemon | undefined;

const git = (repo: string, ...args: string[]) =>
  execFileSync("git", ["-C", repo, ...args], { encoding: "utf8" }).trim();

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
  base = await realpath(world.base);
  await trustInConfig(world);
  outside = await realpath(await mkdtemp(join(tmpdir(), "gstack-untrusted-")));
  victim = join(outside, "repo");
  initRepository(victim);
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
  await rm(outside, { recursive: true, force: true });
});

/** Runs one dispatch whose agent commits `file`, in `projectDir`, and waits for its report. */
async function finished(id: string, file: string, projectDir = world.repo) {
  if (!daemon) {
    daemon = testDaemon(world);
    await daemon.start();
  }
  await submitDispatch(world.layout, dispatchFor(world, id, `commit ${file}`, { project_dir: projectDir }));
  const completion = await waitFor(() => completionOf(world.layout, id), 30_000);
  expect(completion).toMatchObject({ status: "completed", commits: 1, landing: "awaiting" });
  return completion;
}

async function refusal(promise: Promise<unknown>): Promise<LandRefusal> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(LandRefusal);
  return error as LandRefusal;
}

describe("landing: trust follows the repository the work lands in", { timeout: loadBudget(90_000) }, () => {
  it("refuses land and discard once config.yaml no longer trusts the repository, changing nothing; lands once it does again", async () => {
    await finished("dispatch-narrowed", "a.txt");
    const before = await repositorySnapshot(world.repo);
    await trustInConfig(world, [outside]);
    const refused = await runCli(["land", "dispatch-narrowed"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(
      "dispatch-narrowed was not landed or discarded, and nothing was changed: the checkout",
    );
    expect(refused.stderr).toContain(
      "is outside the trusted repos; if you mean to trust it, add it to dispatch.trusted_repos",
    );
    const discarded = await runCli(["discard", "dispatch-narrowed", "--force"]);
    expect(discarded.code).not.toBe(0);
    expect(discarded.stderr).toContain("nothing was changed");
    expect(await repositorySnapshot(world.repo)).toEqual(before);
    await trustInConfig(world);
    const landed = await runCli(["land", "dispatch-narrowed"]);
    expect(landed).toMatchObject({ code: 0 });
    expect(git(world.repo, "log", "-1", "--format=%s", "main")).toBe("add a.txt");
  });

  it("refuses a landing whose checkout's .git was swapped after the run: the other repository's refs untouched", async () => {
    const app = join(base, "app");
    initRepository(app);
    await finished("dispatch-swapped", "b.txt", app);
    const tip = git(app, "rev-parse", "gstack/dispatch-swapped");
    // The checkout's own git folder set aside, and a .git file into an untrusted repository put in its place.
    await rename(join(app, ".git"), join(base, "app-git-aside"));
    await writeFile(join(app, ".git"), `gitdir: ${join(victim, ".git")}\n`);
    const before = await repositorySnapshot(victim);
    const landing = await refusal(landDispatch(world.layout, "dispatch-swapped"));
    expect(landing.rule).toBe("untrusted");
    expect(landing.message).toContain(`the checkout ${app} belongs to the git repository ${victim}`);
    expect(landing.message).toContain(`its .git file ${join(app, ".git")} points to ${join(victim, ".git")}`);
    expect((await refusal(discardDispatch(world.layout, "dispatch-swapped", { force: true }))).rule).toBe(
      "untrusted",
    );
    expect(await repositorySnapshot(victim)).toEqual(before);
    expect(git(victim, "for-each-ref", "--format=%(refname)")).toBe("refs/heads/main");

    // Pointed at another repository the person trusts: still not where the work was made.
    await writeFile(join(app, ".git"), `gitdir: ${join(await realpath(world.repo), ".git")}\n`);
    const elsewhere = await refusal(landDispatch(world.layout, "dispatch-swapped"));
    expect(elsewhere.rule).toBe("untrusted");
    expect(elsewhere.message).toContain(
      `now belongs to the git repository ${join(await realpath(world.repo), ".git")}`,
    );
    expect(elsewhere.message).toContain(`not to ${join(app, ".git")} where the work was made`);
    expect(git(world.repo, "for-each-ref", "--format=%(refname)")).toBe("refs/heads/main");

    await rm(join(app, ".git"));
    await rename(join(base, "app-git-aside"), join(app, ".git"));
    expect(await landDispatch(world.layout, "dispatch-swapped")).toMatchObject({
      landing: "landed",
      changed: true,
    });
    expect(git(app, "rev-parse", "main")).toBe(tip);
  });

  it("lands the work of a linked worktree of a trusted repository into that repository", async () => {
    const linked = join(base, "repo-topic");
    git(world.repo, "worktree", "add", "-q", "-b", "topic", linked);
    const main = git(world.repo, "rev-parse", "main");
    await finished("dispatch-linked", "c.txt", linked);
    const answer = await landDispatch(world.layout, "dispatch-linked");
    expect(answer).toMatchObject({ landing: "landed", base: "topic", how: "fast-forward" });
    expect(git(world.repo, "log", "-1", "--format=%s", "topic")).toBe("add c.txt");
    expect(git(world.repo, "rev-parse", "main")).toBe(main);
    expect(await readFile(join(linked, "c.txt"), "utf8")).toBe("hello\n");
  });

  it("refuses a landing asked through the service API once config.yaml narrows trusted_repos", async () => {
    daemon = new Daemon({
      root: world.root,
      claudeBinary: "/nonexistent/claude",
      openclawWorkspace: false,
      settings: { agents: { codex: { command: [process.execPath, world.agentScript, "{prompt}"] } } },
    });
    await daemon.start();
    await finished("dispatch-api", "d.txt");
    const before = await repositorySnapshot(world.repo);
    await trustInConfig(world, [outside]);
    const api = await reachDaemonApi(world.layout);
    if (!api) throw new Error("the service API is not listening");
    const answer = await apiRequest(api, "POST", "/v1/land", {
      body: JSON.stringify({ dispatch_id: "dispatch-api", action: "land" }),
    });
    expect(answer.status).toBe(409);
    expect(answer.body).toMatchObject({
      error: "land_refused",
      rule: "untrusted",
      dispatch_id: "dispatch-api",
    });
    expect(await repositorySnapshot(world.repo)).toEqual(before);
  });

  it("start-up pruning runs no git command in a repository that is not trusted now: it removes only the daemon's own folder", async () => {
    const app = join(base, "app");
    initRepository(app);
    await finished("dispatch-expired", "e.txt", app);
    await daemon?.stop(0);
    daemon = undefined;
    // The untrusted repository has a worktree whose folder is gone: a `git worktree prune` there would drop its record.
    git(victim, "worktree", "add", "-q", "-b", "stale", join(outside, "stale"));
    await rm(join(outside, "stale"), { recursive: true, force: true });
    await rename(join(app, ".git"), join(base, "app-git-aside"));
    await writeFile(join(app, ".git"), `gitdir: ${join(victim, ".git")}\n`);
    const before = await repositorySnapshot(victim);
    const lines: string[] = [];
    daemon = testDaemon(world, { log: (line) => lines.push(line) }, { worktree_retention_days: 0 });
    await daemon.start();
    const folder = join(world.root, "worktrees", "acme-widget", "dispatch-expired");
    expect(lines.some((line) => line.startsWith(`removed the worktree ${folder}`))).toBe(true);
    expect(lines.some((line) => line.startsWith(`no git command runs in ${app} while pruning`))).toBe(true);
    expect(await repositorySnapshot(victim)).toEqual(before);
  });
});
