import { execFileSync } from "node:child_process";
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { formatStatus, readState, readStatus, submitDispatch, writeState } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import type { Daemon } from "../daemon";
import {
  auditOf,
  completionOf,
  dispatchFor,
  makeWorld,
  startChildDaemon,
  type TestWorld,
  testDaemon,
  waitFor,
} from "../test-support";

let world: TestWorld;
let daemon: Daemon | undefined;
const git = (...args: string[]) =>
  execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8" }).trim();
const worktreeCount = () => git("worktree", "list", "--porcelain").match(/^worktree /gm)?.length ?? 0;

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
});

async function startDaemon(settings: Record<string, unknown> = {}) {
  daemon = testDaemon(world, { retryDelayMs: { rateLimit: 50, other: 50 } }, settings);
  await daemon.start();
}

describe("the daemon and dispatch worktrees", { timeout: loadBudget(60_000) }, () => {
  it.each([
    ["an option-like branch", { branch: "--upload-pack=touch /tmp/x" }, "branch: must not start with '-'"],
    ["a base starting with '-'", { base: "-x" }, "base: must not start with '-'"],
    [
      "a mode in another case",
      { mode: "Plan" },
      'mode: must be one of "execute", "plan", got the string "Plan"',
    ],
  ])(
    "refuses a dispatch file with %s at intake, naming the field and the rule, and never runs it",
    async (_case, extra, rule) => {
      await startDaemon();
      // Written as any writer may write it: the daemon's own intake is what must refuse it.
      const id = "dispatch-refused";
      const temporary = join(world.layout.dispatch.tmp, `${id}.json`);
      await writeFile(temporary, JSON.stringify(dispatchFor(world, id, "commit a.txt", extra)));
      await rename(temporary, join(world.layout.dispatch.incoming, `${id}.json`));
      const rejected = await waitFor(async () =>
        (await auditOf(world.layout)).find((event) => event.event === "rejected"),
      );
      expect(rejected).toMatchObject({ dispatch_id: id, detail: { saved_as: `${id}.json` } });
      expect(String(rejected.reason)).toContain(rule);
      const reason = JSON.parse(
        await readFile(join(world.layout.dispatch.rejected, `${id}.reason.json`), "utf8"),
      );
      expect(reason).toMatchObject({ rule: "schema", id });
      expect(await readFile(join(world.layout.dispatch.rejected, `${id}.json`), "utf8")).toContain(id);
      // It was never taken: no state, no worktree, no completion.
      expect((await auditOf(world.layout)).map((event) => event.event)).toEqual([
        "daemon_started",
        "received",
        "rejected",
      ]);
      await expect(stat(world.layout.dispatch.sessionDir(id))).rejects.toMatchObject({ code: "ENOENT" });
      expect(await completionOf(world.layout, id)).toBeUndefined();
      expect(worktreeCount()).toBe(1);
    },
  );

  it("ends failed, saying why, when the base does not exist, and leaves nothing behind", async () => {
    await startDaemon();
    await submitDispatch(
      world.layout,
      dispatchFor(world, "dispatch-no-base", "commit a.txt", { base: "nope" }),
    );
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-no-base"));
    expect(completion).toMatchObject({ status: "failed" });
    expect(String(completion.error)).toContain("base 'nope' is not a branch, tag or commit");
    expect(worktreeCount()).toBe(1);
    expect(git("branch", "--list", "gstack/*")).toBe("");
  });

  it("works on the branch a dispatch names, from the base it names", async () => {
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "second");
    git("branch", "release", "HEAD~1");
    await startDaemon();
    await submitDispatch(
      world.layout,
      dispatchFor(world, "dispatch-named", "commit a.txt", { branch: "fix/widget", base: "release" }),
    );
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-named"));
    expect(completion).toMatchObject({
      status: "completed",
      branch: "fix/widget",
      base: "release",
      commits: 1,
    });
    expect(git("rev-parse", "fix/widget~1")).toBe(git("rev-parse", "release"));
  });

  it("runs a project listed in in_place_projects in its own checkout", async () => {
    await startDaemon({ in_place_projects: ["acme-widget"] });
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-in-place", "commit a.txt"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-in-place"));
    expect(completion).toMatchObject({
      status: "completed",
      landing: "in_place",
      branch: "main",
      commits: 1,
    });
    expect(await readFile(join(world.repo, "a.txt"), "utf8")).toBe("hello\n");
    expect(worktreeCount()).toBe(1);
  });

  it("never runs two agents in one in-place checkout at once, though slots are free", async () => {
    await startDaemon({ in_place_projects: ["acme-widget"], max_concurrent: 2 });
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-place-1", "sleep 400"));
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-place-2", "sleep 400"));
    await waitFor(() => completionOf(world.layout, "dispatch-place-1"));
    await waitFor(() => completionOf(world.layout, "dispatch-place-2"));
    const audit = await auditOf(world.layout);
    const at = (event: string, id: string) =>
      Date.parse(String(audit.find((entry) => entry.event === event && entry.dispatch_id === id)?.ts));
    const [first, second] =
      at("spawned", "dispatch-place-1") <= at("spawned", "dispatch-place-2")
        ? ["dispatch-place-1", "dispatch-place-2"]
        : ["dispatch-place-2", "dispatch-place-1"];
    expect(at("spawned", second)).toBeGreaterThanOrEqual(at("completed", first));
  });

  it("retries in the same worktree, on the same branch", async () => {
    await startDaemon();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-retry-wt", "commit-then-rate-limit r"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-retry-wt"));
    expect(completion).toMatchObject({ status: "completed", retries: 1, commits: 2 });
    expect(git("diff", "--name-only", "main", "gstack/dispatch-retry-wt").split("\n")).toEqual([
      "r-1",
      "r-2",
    ]);
    const created = (await auditOf(world.layout)).filter((event) => event.event === "worktree_created");
    expect(created).toHaveLength(1);
    expect(worktreeCount()).toBe(2);
  });

  it("after kill -9 of the daemon mid-run: one worktree, one branch, one completion", async () => {
    const crashing = startChildDaemon(world, { crashAfterSpawn: true });
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-crash-wt", "commit a.txt"));
    expect(await crashing.exited).toBe("SIGKILL");
    await startDaemon();
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-crash-wt"), 30_000);
    expect(completion).toMatchObject({ status: "completed", commits: 1, branch: "gstack/dispatch-crash-wt" });
    expect(worktreeCount()).toBe(2);
    expect(git("branch", "--list", "--format=%(refname:short)", "gstack/*")).toBe("gstack/dispatch-crash-wt");
    const ends = (await auditOf(world.layout)).filter(
      (event) => event.event === "completed" && event.dispatch_id === "dispatch-crash-wt",
    );
    expect(ends).toHaveLength(1);
    expect((await auditOf(world.layout)).filter((event) => event.event === "worktree_created")).toHaveLength(
      1,
    );
  });

  it("status lists what awaits landing with its age and disk use; start-up prunes what nobody needs", async () => {
    await startDaemon();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-keep", "commit a.txt"));
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-old", "commit b.txt"));
    const kept = await waitFor(() => completionOf(world.layout, "dispatch-keep"));
    const old = await waitFor(() => completionOf(world.layout, "dispatch-old"));
    await waitFor(async () =>
      (await readState(world.layout, "dispatch-old"))?.status === "finished" ? true : undefined,
    );
    await waitFor(async () =>
      (await readState(world.layout, "dispatch-keep"))?.status === "finished" ? true : undefined,
    );
    const status = await readStatus(world.layout, new Date());
    expect(status.awaiting?.map((item) => item.id).sort()).toEqual(["dispatch-keep", "dispatch-old"]);
    expect(status.awaiting?.[0]?.disk_bytes).toBeGreaterThan(0);
    // Measured when the dispatch finished, kept in its state: status walks no files.
    expect((await readState(world.layout, "dispatch-keep"))?.worktree_measure).toMatchObject({ commits: 1 });
    expect(formatStatus(status)).toContain("2 awaiting landing");
    expect(formatStatus(status)).toMatch(
      /dispatch-keep {2}acme-widget {2}gstack\/dispatch-keep → main {2}\d+m ago {2}\d+ KiB/,
    );
    await daemon?.stop(0);
    daemon = undefined;
    // One finished three days ago; a folder no dispatch owns.
    const state = await readState(world.layout, "dispatch-old");
    if (!state) throw new Error("no state");
    state.updated_at = new Date(Date.now() - 3 * 86_400_000).toISOString();
    await writeState(world.layout, state);
    const ghost = join(world.root, "worktrees", "acme-widget", "dispatch-ghost");
    await mkdir(ghost, { recursive: true });
    await writeFile(join(ghost, "left.txt"), "x");
    await startDaemon({ worktree_retention_days: 1 });
    const exists = (path: string) =>
      stat(path).then(
        () => true,
        () => false,
      );
    expect(await exists(ghost)).toBe(false);
    expect(await exists(String(old.worktree))).toBe(false);
    expect(await exists(String(kept.worktree))).toBe(true);
    // Its branch stays: the work can still be landed.
    expect(git("rev-parse", "--verify", "gstack/dispatch-old")).toMatch(/^[0-9a-f]{40}$/);
    expect(worktreeCount()).toBe(2);
  });
});
