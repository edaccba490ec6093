import { execFileSync, spawn } from "node:child_process";
import { chmod, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  discardDispatch,
  formatStatus,
  LandRefusal,
  landDispatch,
  readState,
  readStatus,
  submitDispatch,
} from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
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
import { checkoutSnapshot } from "../worktree/checkout-snapshot";

let world: TestWorld;
let daemon: Daemon | undefined;

const git = (...args: string[]) =>
  execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8" }).trim();
const gone = (path: string) =>
  stat(path).then(
    () => false,
    () => true,
  );

beforeEach(async () => {
  world = await makeWorld();
  await trustInConfig(world);
  git("config", "user.name", "Person");
  git("config", "user.email", "person@example.invalid");
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
});

/** Runs one dispatch whose agent commits `file` (with "hello"), and waits for its report. */
async function runDispatch(id: string, file: string) {
  if (!daemon) {
    daemon = testDaemon(world);
    await daemon.start();
  }
  await submitDispatch(world.layout, dispatchFor(world, id, `commit ${file}`));
  const completion = await waitFor(() => completionOf(world.layout, id), 30_000);
  expect(completion).toMatchObject({ status: "completed", commits: 1, landing: "awaiting" });
  return completion;
}

async function commitInCheckout(file: string, content: string) {
  await writeFile(join(world.repo, file), content);
  git("add", file);
  git("commit", "-q", "-m", `person: ${file}`);
}

async function refusal(promise: Promise<unknown>): Promise<LandRefusal> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(LandRefusal);
  return error as LandRefusal;
}

const events = async (name: string, id: string) =>
  (await auditOf(world.layout)).filter((event) => event.event === name && event.dispatch_id === id);

describe("landing a dispatch's branch on the person's word", { timeout: loadBudget(60_000) }, () => {
  it("fast-forwards the checked-out base, removes worktree and branch, and does it once", async () => {
    const completion = await runDispatch("dispatch-land-ff", "a.txt");
    const tip = git("rev-parse", "gstack/dispatch-land-ff");
    const answer = await landDispatch(world.layout, "dispatch-land-ff");
    expect(answer).toMatchObject({
      landing: "landed",
      changed: true,
      how: "fast-forward",
      base: "main",
      commit: tip,
    });
    expect(git("rev-parse", "main")).toBe(tip);
    expect(await readFile(join(world.repo, "a.txt"), "utf8")).toBe("hello\n");
    expect(git("status", "--porcelain")).toBe("");
    expect(await gone(String(completion.worktree))).toBe(true);
    expect(git("branch", "--list", "gstack/*")).toBe("");
    expect(git("worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(1);
    expect(await completionOf(world.layout, "dispatch-land-ff")).toMatchObject({ landing: "landed" });
    const again = await landDispatch(world.layout, "dispatch-land-ff");
    expect(again).toMatchObject({ landing: "landed", changed: false, commit: tip });
    expect(await events("landed", "dispatch-land-ff")).toHaveLength(1);
  });

  it("makes a merge commit when the base moved on, without a half-done merge anywhere", async () => {
    await runDispatch("dispatch-land-merge", "a.txt");
    await commitInCheckout("b.txt", "the person's\n");
    const base = git("rev-parse", "main");
    const tip = git("rev-parse", "gstack/dispatch-land-merge");
    const answer = await landDispatch(world.layout, "dispatch-land-merge");
    expect(answer).toMatchObject({ landing: "landed", how: "merge" });
    expect(git("rev-parse", "main^1")).toBe(base);
    expect(git("rev-parse", "main^2")).toBe(tip);
    expect(await readFile(join(world.repo, "a.txt"), "utf8")).toBe("hello\n");
    expect(await readFile(join(world.repo, "b.txt"), "utf8")).toBe("the person's\n");
    expect(git("status", "--porcelain")).toBe("");
  });

  it("refuses a conflict, naming the file, and changes nothing", async () => {
    const completion = await runDispatch("dispatch-land-conflict", "a.txt");
    await commitInCheckout("a.txt", "the person's own a.txt\n");
    const before = checkoutSnapshot(world.repo);
    const tip = git("rev-parse", "gstack/dispatch-land-conflict");
    const refused = await refusal(landDispatch(world.layout, "dispatch-land-conflict"));
    expect(refused.rule).toBe("conflict");
    expect(refused.files).toEqual(["a.txt"]);
    expect(refused.message).toContain("a.txt");
    expect(checkoutSnapshot(world.repo)).toEqual(before);
    expect(git("rev-parse", "gstack/dispatch-land-conflict")).toBe(tip);
    expect(await gone(String(completion.worktree))).toBe(false);
    expect(await events("landed", "dispatch-land-conflict")).toHaveLength(0);
  });

  it("refuses while the base is checked out with uncommitted changes, naming them", async () => {
    await commitInCheckout("c.txt", "one\n");
    await runDispatch("dispatch-land-dirty", "a.txt");
    await writeFile(join(world.repo, "c.txt"), "edited, not committed\n");
    const before = checkoutSnapshot(world.repo);
    const refused = await refusal(landDispatch(world.layout, "dispatch-land-dirty"));
    expect(refused.rule).toBe("dirty-checkout");
    expect(refused.files).toEqual(["c.txt"]);
    expect(checkoutSnapshot(world.repo)).toEqual(before);
  });

  it("refuses while another process holds the checkout's index lock, naming it, and never removes it", async () => {
    await runDispatch("dispatch-land-locked", "a.txt");
    const lock = join(world.repo, ".git", "index.lock");
    const holder = spawn(
      process.execPath,
      [
        "-e",
        `require("node:fs").openSync(${JSON.stringify(lock)}, "wx"); console.log("held"); setInterval(() => {}, 1000);`,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    try {
      await new Promise((resolve) => holder.stdout?.once("data", resolve));
      const held = await stat(lock);
      const main = git("rev-parse", "main");
      const refused = await refusal(landDispatch(world.layout, "dispatch-land-locked"));
      expect(refused.rule).toBe("locked");
      expect(refused.message).toContain(lock);
      expect(refused.files).toEqual([lock]);
      expect((await stat(lock)).ino).toBe(held.ino);
      expect(holder.exitCode).toBeNull();
      expect(git("rev-parse", "main")).toBe(main);
      expect(await events("landed", "dispatch-land-locked")).toHaveLength(0);
    } finally {
      holder.kill("SIGKILL");
      await new Promise((resolve) =>
        holder.exitCode === null ? holder.once("exit", resolve) : resolve(null),
      );
    }
    await rm(lock);
    expect(await landDispatch(world.layout, "dispatch-land-locked")).toMatchObject({ landing: "landed" });
    expect(git("status", "--porcelain")).toBe("");
  });

  it("refuses when an untracked file of the person's is in the way, naming it, and changes nothing", async () => {
    await runDispatch("dispatch-land-untracked", "a.txt");
    await writeFile(join(world.repo, "a.txt"), "the person's own, never added\n");
    const before = checkoutSnapshot(world.repo);
    const main = git("rev-parse", "main");
    const refused = await refusal(landDispatch(world.layout, "dispatch-land-untracked"));
    expect(refused.rule).toBe("in-the-way");
    expect(refused.files).toEqual(["a.txt"]);
    expect(refused.message).toContain("a.txt");
    expect(checkoutSnapshot(world.repo)).toEqual(before);
    expect(git("rev-parse", "main")).toBe(main);
    expect((await readdir(join(world.repo, ".git"))).filter((name) => /lock|gstack-/.test(name))).toEqual([]);
  });

  it("refuses when an ignored file of the person's sits where the branch adds one, naming it, and keeps it", async () => {
    await runDispatch("dispatch-land-ignored", "config.env");
    // The person's own settings, ignored in their checkout (git would overwrite it silently).
    await writeFile(join(world.repo, ".gitignore"), "config.env\n.gitignore\n");
    await writeFile(join(world.repo, "config.env"), "SECRET=the person's\n");
    expect(git("check-ignore", "config.env")).toBe("config.env");
    const main = git("rev-parse", "main");
    const refused = await refusal(landDispatch(world.layout, "dispatch-land-ignored"));
    expect(refused.rule).toBe("in-the-way");
    expect(refused.files).toEqual(["config.env"]);
    expect(refused.message).toContain("config.env");
    expect(refused.message).toContain("move it aside");
    expect(await readFile(join(world.repo, "config.env"), "utf8")).toBe("SECRET=the person's\n");
    expect(git("rev-parse", "main")).toBe(main);
    // Moved aside, it lands.
    await rm(join(world.repo, "config.env"));
    await landDispatch(world.layout, "dispatch-land-ignored");
    expect(await readFile(join(world.repo, "config.env"), "utf8")).toBe("hello\n");
  });

  it("with --pr pushes the branch to the remote and opens a pull request with gh", async () => {
    const remote = join(world.base, "remote.git");
    execFileSync("git", ["init", "-q", "--bare", remote]);
    git("remote", "add", "origin", remote);
    // A stand-in for gh that records what it was asked and answers as gh does.
    const record = join(world.base, "gh-calls.jsonl");
    const gh = join(world.base, "gh");
    await writeFile(
      gh,
      `#!/usr/bin/env node
require("node:fs").appendFileSync(${JSON.stringify(record)}, JSON.stringify(process.argv.slice(2)) + "\\n");
if (process.argv[3] === "list") console.log("[]");
else if (process.argv[2] === "pr") console.log("https://github.com/acme/widget/pull/7");
else console.log("gh version 2.0.0 (stand-in)");
`,
    );
    await chmod(gh, 0o755);
    await runDispatch("dispatch-land-pr", "a.txt");
    const tip = git("rev-parse", "gstack/dispatch-land-pr");
    const main = git("rev-parse", "main");
    const answer = await landDispatch(world.layout, "dispatch-land-pr", { pr: true, gh });
    expect(answer).toMatchObject({
      landing: "pr_opened",
      how: "pull-request",
      pr: "https://github.com/acme/widget/pull/7",
    });
    expect(
      execFileSync("git", ["-C", remote, "rev-parse", "gstack/dispatch-land-pr"], {
        encoding: "utf8",
      }).trim(),
    ).toBe(tip);
    expect(git("rev-parse", "main")).toBe(main);
    const calls = (await readFile(record, "utf8"))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as string[]);
    const create = calls.find((call) => call[0] === "pr" && call[1] === "create");
    expect(create).toEqual(
      expect.arrayContaining(["create", "--head", "gstack/dispatch-land-pr", "--base", "main"]),
    );
    expect(await completionOf(world.layout, "dispatch-land-pr")).toMatchObject({
      landing: "pr_opened",
      pr: "acme/widget#7",
    });
    expect(await events("landed", "dispatch-land-pr")).toHaveLength(1);
  });

  it("discards only with --force when the branch was never landed, then once", async () => {
    const completion = await runDispatch("dispatch-discard", "a.txt");
    const refused = await refusal(discardDispatch(world.layout, "dispatch-discard"));
    expect(refused.rule).toBe("unlanded");
    expect(git("branch", "--list", "gstack/dispatch-discard")).toContain("gstack/dispatch-discard");
    const answer = await discardDispatch(world.layout, "dispatch-discard", { force: true });
    expect(answer).toMatchObject({ landing: "discarded", changed: true });
    expect(git("branch", "--list", "gstack/dispatch-discard")).toBe("");
    expect(await gone(String(completion.worktree))).toBe(true);
    expect(await discardDispatch(world.layout, "dispatch-discard")).toMatchObject({ changed: false });
    expect(await events("discarded", "dispatch-discard")).toHaveLength(1);
    expect((await refusal(landDispatch(world.layout, "dispatch-discard"))).rule).toBe("discarded");
    expect(await completionOf(world.layout, "dispatch-discard")).toMatchObject({ landing: "discarded" });
  });

  it("discards a dispatch that made nothing without --force", async () => {
    daemon = testDaemon(world);
    await daemon.start();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-discard-empty", "nothing to do"));
    const completion = await waitFor(() => completionOf(world.layout, "dispatch-discard-empty"), 30_000);
    expect(completion).toMatchObject({ status: "completed", commits: 0, landing: "nothing" });
    expect(await discardDispatch(world.layout, "dispatch-discard-empty")).toMatchObject({
      landing: "discarded",
    });
  });
});

describe("a dispatch with nothing to land", { timeout: loadBudget(60_000) }, () => {
  /** Runs one dispatch with the test agent doing `task`, and waits for its report. */
  async function ended(id: string, task: string) {
    daemon ??= testDaemon(world);
    await daemon.start();
    await submitDispatch(world.layout, dispatchFor(world, id, task));
    const completion = await waitFor(() => completionOf(world.layout, id), 30_000);
    // The report appears just before the state says finished: status reads the state.
    await waitFor(async () =>
      (await readState(world.layout, id))?.status === "finished" ? true : undefined,
    );
    return completion;
  }

  it("failed with no commits: never offered for landing, land refuses in words, discard removes it", async () => {
    const id = "dispatch-failed-empty";
    const completion = await ended(id, "fail");
    expect(completion).toMatchObject({ status: "failed", commits: 0, landing: "nothing" });
    // The report offers only the discard.
    const report = await readFile(world.layout.dispatch.completedReport(id), "utf8");
    expect(report).toContain("Nothing to land: the branch has no commits beyond `main`.");
    expect(report).toContain(`gstack-dispatch discard ${id}`);
    expect(report).not.toContain(`gstack-dispatch land ${id}`);
    // status lists it with nothing to land, not under the landings.
    const status = await readStatus(world.layout);
    expect(status.awaiting).toEqual([expect.objectContaining({ id, nothing: true })]);
    const text = formatStatus(status);
    expect(text).not.toContain("awaiting landing");
    expect(text).toContain("1 with nothing to land");
    expect(text).toMatch(new RegExp(`∅ ${id}  acme-widget  gstack/${id}`));
    // land and land --pr refuse, saying why, and change nothing.
    const main = git("rev-parse", "main");
    for (const options of [{}, { pr: true, gh: "/nonexistent/gh" }]) {
      const refused = await refusal(landDispatch(world.layout, id, options));
      expect(refused.rule).toBe("nothing");
      expect(refused.message).toBe(
        `nothing to land: the branch gstack/${id} has no commits beyond main; discard removes its worktree and branch`,
      );
    }
    expect(git("rev-parse", "main")).toBe(main);
    expect(await events("landed", id)).toEqual([]);
    expect(await completionOf(world.layout, id)).toMatchObject({ landing: "nothing" });
    // discard needs no --force, and takes the worktree and branch away.
    expect(await discardDispatch(world.layout, id)).toMatchObject({ landing: "discarded", changed: true });
    expect(await gone(String(completion.worktree))).toBe(true);
    expect(git("branch", "--list", `gstack/${id}`)).toBe("");
    expect(await completionOf(world.layout, id)).toMatchObject({ landing: "discarded" });
    expect((await readStatus(world.layout)).awaiting).toBeUndefined();
  });

  it("failed after committing: stays landable, and lands", async () => {
    const id = "dispatch-failed-work";
    const completion = await ended(id, "commit-then-fail half.txt");
    expect(completion).toMatchObject({ status: "failed", commits: 1, landing: "awaiting" });
    const status = await readStatus(world.layout);
    expect(status.awaiting).toEqual([expect.not.objectContaining({ nothing: true })]);
    expect(formatStatus(status)).toContain(`1 awaiting landing`);
    const tip = git("rev-parse", `gstack/${id}`);
    expect(await landDispatch(world.layout, id)).toMatchObject({
      landing: "landed",
      how: "fast-forward",
      commit: tip,
    });
    expect(await readFile(join(world.repo, "half.txt"), "utf8")).toBe("half done\n");
  });

  it("a branch whose commits its base already has is nothing to land; discard agrees", async () => {
    const id = "dispatch-already-in";
    await ended(id, "commit b.txt");
    // The person merged the branch by hand: landing would change nothing.
    git("merge", "-q", "--ff-only", `gstack/${id}`);
    expect((await refusal(landDispatch(world.layout, id))).rule).toBe("nothing");
    expect((await readStatus(world.layout)).awaiting).toEqual([
      expect.objectContaining({ id, nothing: true }),
    ]);
    expect(await discardDispatch(world.layout, id)).toMatchObject({ landing: "discarded" });
  });
});
