import { execFileSync } from "node:child_process";
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Daemon } from "../daemon";
import {
  auditOf,
  completionOf,
  dispatchFor,
  initRepository,
  makeWorld,
  repositorySnapshot,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";
import { untrustedAtLaunch } from "./launch-trust";

let world: TestWorld;
let outside: string;
let daemon: Daemon | undefined;

beforeEach(async () => {
  world = await makeWorld();
  // A repository nobody trusts, outside the world's trusted folder.
  outside = await realpath(await mkdtemp(join(tmpdir(), "gstack-untrusted-")));
  initRepository(join(outside, "repo"));
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
  await rm(outside, { recursive: true, force: true });
});

async function promptsFor(folder: string, id: string): Promise<number> {
  try {
    return (await readFile(join(folder, "prompts.log"), "utf8"))
      .split("\n")
      .filter((line) => line.includes(`"id":"${id}"`)).length;
  } catch {
    return 0;
  }
}

async function audited(event: string, id: string): Promise<true | undefined> {
  return (await auditOf(world.layout)).some((entry) => entry.event === event && entry.dispatch_id === id)
    ? true
    : undefined;
}

const subjects = (repo: string) =>
  execFileSync("git", ["-C", repo, "log", "--format=%s"], { encoding: "utf8" }).trim();

describe("trust checked again right before an agent starts", () => {
  it("refuses a queued dispatch whose folder was swapped for a symbolic link into an untrusted repository", async () => {
    daemon = testDaemon(world, {}, { max_concurrent: 1 });
    await daemon.start();
    // The one slot is held by an agent that waits until it is cancelled.
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-holder", "hang"));
    await waitFor(() => audited("spawned", "dispatch-holder"));
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-swapped", "commit swapped.txt"));
    await waitFor(() => audited("queued", "dispatch-swapped"));
    // Taken while trusted; now the folder leads elsewhere.
    await rename(world.repo, join(world.base, "repo-moved"));
    await symlink(join(outside, "repo"), world.repo);
    await daemon.requestCancel("dispatch-holder", "free the slot");
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-swapped"));
    expect(completion.status).toBe("failed");
    expect(String(completion.error)).toMatch(
      /^refused at launch: project folder .*repo now leads to .*gstack-untrusted-.*repo/,
    );
    expect(await promptsFor(outside, "dispatch-swapped")).toBe(0);
    expect(subjects(join(outside, "repo"))).toBe("start");
    const rejected = (await auditOf(world.layout)).find(
      (entry) => entry.event === "rejected" && entry.dispatch_id === "dispatch-swapped",
    );
    expect(rejected?.reason).toMatch(/refused at launch/);
    expect(await audited("spawned", "dispatch-swapped")).toBeUndefined();
  });

  it("refuses a queued dispatch outside trusted_repos narrowed before a restart", async () => {
    daemon = testDaemon(world, {}, { max_concurrent: 1 });
    await daemon.start();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-holder", "hang"));
    await waitFor(() => audited("spawned", "dispatch-holder"));
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-narrowed", "commit narrowed.txt"));
    await waitFor(() => audited("queued", "dispatch-narrowed"));
    await daemon.stop(0);
    // The user narrows the trusted folders to another one and starts the daemon again.
    daemon = testDaemon(world, {}, { max_concurrent: 1, trusted_repos: [join(outside, "repo")] });
    await daemon.start();
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-narrowed"));
    expect(completion.status).toBe("failed");
    expect(String(completion.error)).toMatch(
      /^refused at launch: project_dir .* is outside the trusted repos/,
    );
    expect(await promptsFor(world.base, "dispatch-narrowed")).toBe(0);
    expect(subjects(world.repo)).toBe("start");
  });

  it("refuses a queued dispatch once config.yaml narrows trusted_repos, without a restart", async () => {
    await mkdir(world.root, { recursive: true });
    await writeFile(world.layout.config, `dispatch:\n  trusted_repos: [${world.base}]\n`);
    daemon = new Daemon({
      root: world.root,
      claudeBinary: "/nonexistent/claude",
      openclawWorkspace: false,
      settings: {
        max_concurrent: 1,
        agents: { codex: { command: [process.execPath, world.agentScript, "{prompt}"] } },
      },
    });
    await daemon.start();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-holder", "hang"));
    await waitFor(() => audited("spawned", "dispatch-holder"));
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-edited", "commit edited.txt"));
    await waitFor(() => audited("queued", "dispatch-edited"));
    await writeFile(world.layout.config, `dispatch:\n  trusted_repos: [${join(outside, "repo")}]\n`);
    await daemon.requestCancel("dispatch-holder", "free the slot");
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-edited"));
    expect(completion.status).toBe("failed");
    expect(String(completion.error)).toMatch(
      /^refused at launch: project_dir .* is outside the trusted repos/,
    );
    expect(await promptsFor(world.base, "dispatch-edited")).toBe(0);
  });

  it("refuses a queued dispatch whose repository left trusted_repos after intake, though its folder is still listed", async () => {
    const victim = join(outside, "repo");
    const app = join(await realpath(world.base), "app");
    await mkdir(app);
    await writeFile(join(app, ".git"), `gitdir: ${join(victim, ".git")}\n`);
    await mkdir(world.root, { recursive: true });
    await writeFile(world.layout.config, `dispatch:\n  trusted_repos: [${world.base}, ${outside}]\n`);
    daemon = new Daemon({
      root: world.root,
      claudeBinary: "/nonexistent/claude",
      openclawWorkspace: false,
      settings: {
        max_concurrent: 1,
        agents: { codex: { command: [process.execPath, world.agentScript, "{prompt}"] } },
      },
    });
    await daemon.start();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-holder", "hang"));
    await waitFor(() => audited("spawned", "dispatch-holder"));
    await submitDispatch(
      world.layout,
      dispatchFor(world, "dispatch-repo-untrusted", "commit walked.txt", { project_dir: app }),
    );
    await waitFor(() => audited("queued", "dispatch-repo-untrusted"));
    const before = await repositorySnapshot(victim);
    // The person trusts only their own folder again; the dispatch's folder is still in it.
    await writeFile(world.layout.config, `dispatch:\n  trusted_repos: [${world.base}]\n`);
    await daemon.requestCancel("dispatch-holder", "free the slot");
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-repo-untrusted"));
    expect(completion.status).toBe("failed");
    expect(String(completion.error)).toMatch(
      new RegExp(`^refused at launch: project_dir ${app} belongs to the git repository ${victim} `),
    );
    expect(String(completion.error)).toContain(`add ${victim} to dispatch.trusted_repos in config.yaml`);
    expect(await promptsFor(world.base, "dispatch-repo-untrusted")).toBe(0);
    expect(await audited("spawned", "dispatch-repo-untrusted")).toBeUndefined();
    expect(await readdir(join(world.root, "worktrees", "acme-widget")).catch(() => [])).not.toContain(
      "dispatch-repo-untrusted",
    );
    expect(await repositorySnapshot(victim)).toEqual(before);
    expect(subjects(victim)).toBe("start");
  });

  it("refuses a queued dispatch whose folder's .git file was swapped after intake to point into an untrusted repository", async () => {
    const victim = join(outside, "repo");
    const app = join(await realpath(world.base), "app");
    await mkdir(app);
    await writeFile(join(app, ".git"), `gitdir: ${join(world.repo, ".git")}\n`);
    daemon = testDaemon(world, {}, { max_concurrent: 1 });
    await daemon.start();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-holder", "hang"));
    await waitFor(() => audited("spawned", "dispatch-holder"));
    await submitDispatch(
      world.layout,
      dispatchFor(world, "dispatch-git-swapped", "commit swapped.txt", { project_dir: app }),
    );
    await waitFor(() => audited("queued", "dispatch-git-swapped"));
    await writeFile(join(app, ".git"), `gitdir: ${join(victim, ".git")}\n`);
    const before = await repositorySnapshot(victim);
    await daemon.requestCancel("dispatch-holder", "free the slot");
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-git-swapped"));
    expect(completion.status).toBe("failed");
    expect(String(completion.error)).toContain(`belongs to the git repository ${victim}`);
    expect(await promptsFor(world.base, "dispatch-git-swapped")).toBe(0);
    expect(await repositorySnapshot(victim)).toEqual(before);
  });

  it("refuses a launch whose checkout now belongs to another repository than the one its worktree was made from", async () => {
    const other = join(await realpath(world.base), "other");
    const repo = await realpath(world.repo);
    initRepository(other);
    const record = {
      repo,
      common_dir: join(other, ".git"),
      path: join(world.root, "worktrees", "acme-widget", "dispatch-x"),
      cwd: join(world.root, "worktrees", "acme-widget", "dispatch-x"),
      branch: "gstack/dispatch-x",
      base: "main",
      base_sha: "0".repeat(40),
      created_at: new Date().toISOString(),
    };
    expect(await untrustedAtLaunch(repo, [world.base], record)).toMatch(
      new RegExp(`now belongs to the git repository ${join(repo, ".git")} .* not to ${join(other, ".git")}`),
    );
    expect(
      await untrustedAtLaunch(repo, [world.base], { ...record, common_dir: join(repo, ".git") }),
    ).toBeUndefined();
  });
});
