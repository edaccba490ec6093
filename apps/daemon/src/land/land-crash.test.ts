import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { chmod, mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { discardDispatch, LandRefusal, landDispatch, readState, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import type { Daemon } from "../daemon";
import {
  auditOf,
  bundledModule,
  completionOf,
  dispatchFor,
  makeWorld,
  type TestWorld,
  testDaemon,
  trustInConfig,
  waitFor,
} from "../test-support";
import { materializeWorktree } from "../worktree/materialize";
import { planWorktree } from "../worktree/plan";

let world: TestWorld;
let daemon: Daemon | undefined;
const git = (...args: string[]) =>
  execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8" }).trim();
const worktrees = () => git("worktree", "list", "--porcelain").match(/^worktree /gm)?.length ?? 0;
/** Lock files and landing files left in the repository's git folder. */
const leftInGitDir = async () =>
  (await readdir(join(world.repo, ".git"))).filter(
    (name) => name.endsWith(".lock") || name.startsWith("gstack-"),
  );
const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );
/** A source module (by its path from the package's folder), bundled, for a child process to import. */
const module = (path: string) =>
  JSON.stringify(
    path.startsWith("node_modules/")
      ? pathToFileURL(join(import.meta.dirname, "..", "..", path)).href
      : bundledModule(path),
  );

beforeEach(async () => {
  world = await makeWorld();
  await trustInConfig(world);
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
});

/**
 * Runs `action` in a child process once it is loaded, and kills it (and what it started) with
 * SIGKILL `delayMs` after telling it to go (or lets it finish, when it is quicker), or, given a
 * check, as soon as the check says so.
 */
async function killedDuring(
  imports: string,
  action: string,
  delayMs: number | (() => Promise<true | undefined>),
): Promise<void> {
  const script = join(world.base, `crash-${Math.random().toString(36).slice(2)}.mjs`);
  await writeFile(
    script,
    `${imports}\nprocess.stdout.write("ready\\n");\nprocess.stdin.once("data", async () => {\n${action}\nprocess.exit(0);\n});\n`,
  );
  const child: ChildProcess = spawn(process.execPath, ["--enable-source-maps", script], {
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
  if (typeof delayMs === "number") await new Promise((resolve) => setTimeout(resolve, delayMs));
  else await waitFor(delayMs, 60_000);
  try {
    process.kill(-(child.pid as number), "SIGKILL");
  } catch {}
  await exited;
}

const DELAYS = [0, 3, 8, 15, 30, 60, 120];

describe("kill -9 at random moments", { timeout: loadBudget(120_000) }, () => {
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
        `import { materializeWorktree } from ${module("src/worktree/materialize.ts")};`,
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
        `import { landDispatch } from ${module("../../packages/daemon-client/src/land/land.ts")};\nimport { gstackLayout } from ${module("node_modules/@gstack/contracts/dist/index.js")};`,
        `await landDispatch(gstackLayout(${JSON.stringify(world.root)}), ${JSON.stringify(id)});`,
        delay,
      );
      const answer = await landDispatch(world.layout, id);
      expect(answer.landing).toBe("landed");
      expect(execFileSync("git", ["-C", world.repo, "merge-base", "--is-ancestor", tip, "main"]).length).toBe(
        0,
      );
      expect(git("status", "--porcelain")).toBe("");
      expect(await leftInGitDir()).toEqual([]);
      expect(worktrees()).toBe(1);
      expect(git("branch", "--list", `gstack/${id}`)).toBe("");
      const landed = (await auditOf(world.layout)).filter(
        (event) => event.event === "landed" && event.dispatch_id === id,
      );
      expect(landed).toHaveLength(1);
      expect(await completionOf(world.layout, id)).toMatchObject({ landing: "landed" });
    }
  });

  it.each([
    { at: "create", when: "after gh opened the pull request" },
    { at: "list", when: "after the push, before gh opened one" },
  ])("$when, before the record: land --pr again finishes with one pull request", async ({ at }) => {
    const remote = join(world.base, "remote.git");
    execFileSync("git", ["init", "-q", "--bare", remote]);
    git("remote", "add", "origin", remote);
    // A stand-in for gh that keeps the pull requests it opened (as GitHub would), refuses a
    // second one for the same branch as gh does, and, once, kills the process that ran it with
    // SIGKILL: right after opening one, or (before any is open) when asked for the open ones.
    const prs = join(world.base, "prs.json");
    const calls = join(world.base, "gh-calls.jsonl");
    const crashOnce = join(world.base, "crash-once");
    const gh = join(world.base, "gh");
    await writeFile(
      gh,
      `#!/usr/bin/env node
const fs = require("node:fs");
const args = process.argv.slice(2);
fs.appendFileSync(${JSON.stringify(calls)}, JSON.stringify(args) + "\\n");
const prs = fs.existsSync(${JSON.stringify(prs)}) ? JSON.parse(fs.readFileSync(${JSON.stringify(prs)}, "utf8")) : [];
const head = args[args.indexOf("--head") + 1];
const crash = (at) => {
  if (fs.existsSync(${JSON.stringify(crashOnce)}) && fs.readFileSync(${JSON.stringify(crashOnce)}, "utf8") === at) {
    fs.rmSync(${JSON.stringify(crashOnce)});
    process.kill(process.ppid, "SIGKILL");
  }
};
if (args[0] === "pr" && args[1] === "list") {
  crash("list");
  console.log(JSON.stringify(prs.filter((pr) => pr.headRefName === head)));
} else if (args[0] === "pr" && args[1] === "create") {
  const open = prs.find((pr) => pr.headRefName === head);
  if (open) {
    console.error('a pull request for branch "' + head + '" into branch "main" already exists:\\n' + open.url);
    process.exit(1);
  }
  const url = "https://github.com/acme/widget/pull/" + (prs.length + 1);
  prs.push({ url, headRefName: head });
  fs.writeFileSync(${JSON.stringify(prs)}, JSON.stringify(prs));
  console.log(url);
  crash("create");
} else console.log("gh version 2.0.0 (stand-in)");
`,
    );
    await chmod(gh, 0o755);
    daemon = testDaemon(world);
    await daemon.start();
    const id = "dispatch-crash-pr";
    await submitDispatch(world.layout, dispatchFor(world, id, "commit pr.txt"));
    await waitFor(() => completionOf(world.layout, id), 30_000);
    const tip = git("rev-parse", `gstack/${id}`);
    await writeFile(crashOnce, at);
    const script = join(world.base, "land-pr.mjs");
    await writeFile(
      script,
      `import { landDispatch } from ${module("../../packages/daemon-client/src/land/land.ts")};
import { gstackLayout } from ${module("node_modules/@gstack/contracts/dist/index.js")};
await landDispatch(gstackLayout(${JSON.stringify(world.root)}), ${JSON.stringify(id)}, { pr: true, gh: ${JSON.stringify(gh)} });
`,
    );
    const child = spawn(process.execPath, ["--enable-source-maps", script], {
      cwd: join(import.meta.dirname, "..", ".."),
      stdio: ["ignore", "inherit", "inherit"],
    });
    const signal = await new Promise((resolve) => child.on("exit", (_code, killed) => resolve(killed)));
    // Killed where meant: the branch pushed (and the pull request open, or not yet), nothing recorded.
    expect(signal).toBe("SIGKILL");
    expect(
      await stat(join(world.layout.dispatch.sessionDir(id), "landing.json")).then(
        () => true,
        () => false,
      ),
    ).toBe(false);
    expect(
      execFileSync("git", ["-C", remote, "rev-parse", `gstack/${id}`], { encoding: "utf8" }).trim(),
    ).toBe(tip);
    expect(await completionOf(world.layout, id)).toMatchObject({ landing: "awaiting" });
    const opened = await readFile(prs, "utf8").then(
      (text) => (JSON.parse(text) as unknown[]).length,
      () => 0,
    );
    expect(opened).toBe(at === "create" ? 1 : 0);

    const answer = await landDispatch(world.layout, id, { pr: true, gh });
    expect(answer).toMatchObject({
      landing: "pr_opened",
      how: "pull-request",
      pr: "https://github.com/acme/widget/pull/1",
    });
    expect(JSON.parse(await readFile(prs, "utf8"))).toHaveLength(1);
    const created = (await readFile(calls, "utf8"))
      .trim()
      .split("\n")
      .filter((line) => (JSON.parse(line) as string[]).slice(0, 2).join(" ") === "pr create");
    expect(created).toHaveLength(1);
    expect(await completionOf(world.layout, id)).toMatchObject({
      landing: "pr_opened",
      pr: "acme/widget#1",
    });
    const landed = (await auditOf(world.layout)).filter(
      (event) => event.event === "landed" && event.dispatch_id === id,
    );
    expect(landed).toHaveLength(1);
    expect(worktrees()).toBe(1);
    // Asked once more: what was done, nothing new.
    expect(await landDispatch(world.layout, id, { pr: true, gh })).toMatchObject({
      changed: false,
      pr: "https://github.com/acme/widget/pull/1",
    });
    expect(JSON.parse(await readFile(prs, "utf8"))).toHaveLength(1);
  });

  describe("while git writes the person's checkout", () => {
    /**
     * A smudge filter on `slow-*.txt` that, when armed, says so and then hangs, so a landing can be
     * killed exactly while it writes the checked-out base's working tree (where `git merge` would
     * hold the checkout's index.lock).
     */
    async function slowCheckout() {
      const armed = join(world.base, "armed");
      const hit = join(world.base, "hit");
      const smudge = join(world.base, "smudge.sh");
      await writeFile(
        smudge,
        `#!/bin/sh\nif [ -e ${JSON.stringify(armed)} ]; then rm -f ${JSON.stringify(armed)}; : > ${JSON.stringify(hit)}; sleep 60; fi\nexec cat\n`,
      );
      await chmod(smudge, 0o755);
      git("config", "filter.slow.smudge", smudge);
      git("config", "filter.slow.clean", "cat");
      await writeFile(join(world.repo, ".git", "info", "attributes"), "slow-*.txt filter=slow\n");
      return {
        /** Lands `id` in a child process killed with -9 while the filter hangs. */
        landKilled: async (id: string) => {
          await rm(hit, { force: true });
          await writeFile(armed, "");
          await killedDuring(
            `import { landDispatch } from ${module("../../packages/daemon-client/src/land/land.ts")};\nimport { gstackLayout } from ${module("node_modules/@gstack/contracts/dist/index.js")};`,
            `await landDispatch(gstackLayout(${JSON.stringify(world.root)}), ${JSON.stringify(id)});`,
            async () => ((await exists(hit)) ? true : undefined),
          );
        },
      };
    }

    async function finished(id: string) {
      await submitDispatch(world.layout, dispatchFor(world, id, `commit slow-${id}.txt`));
      await waitFor(() => completionOf(world.layout, id), 30_000);
      return git("rev-parse", `gstack/${id}`);
    }

    async function expectLandedOnce(id: string, tip: string) {
      expect(execFileSync("git", ["-C", world.repo, "merge-base", "--is-ancestor", tip, "main"]).length).toBe(
        0,
      );
      expect(git("status", "--porcelain")).toBe("");
      expect(git("hash-object", `slow-${id}.txt`)).toBe(git("rev-parse", `${tip}:slow-${id}.txt`));
      expect(await leftInGitDir()).toEqual([]);
      expect(worktrees()).toBe(1);
      const landed = (await auditOf(world.layout)).filter(
        (event) => event.event === "landed" && event.dispatch_id === id,
      );
      expect(landed).toHaveLength(1);
      expect(await completionOf(world.layout, id)).toMatchObject({ landing: "landed" });
    }

    it("the lock left is the landing's own: asking again, or the next start-up, finishes it once", async () => {
      daemon = testDaemon(world);
      await daemon.start();
      const { landKilled } = await slowCheckout();

      // Cut short half way through the checkout (a file deleted and one written before the
      // hanging one), then asked again.
      await writeFile(join(world.repo, "gone.txt"), "old\n");
      git("add", "gone.txt");
      git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "gone.txt");
      const before = git("rev-parse", "main");
      const first = "dispatch-cut-ask";
      await finished(first);
      const tree = (await readState(world.layout, first))?.worktree?.path as string;
      await writeFile(join(tree, "a-first.txt"), "first\n");
      execFileSync("git", ["-C", tree, "rm", "-q", "gone.txt"]);
      execFileSync("git", ["-C", tree, "add", "a-first.txt"]);
      execFileSync("git", [
        "-C",
        tree,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-q",
        "-m",
        "more",
      ]);
      const firstTip = git("rev-parse", `gstack/${first}`);
      await landKilled(first);
      expect(await exists(join(world.repo, ".git", "index.lock"))).toBe(true);
      expect(git("rev-parse", "main")).toBe(before);
      expect(await exists(join(world.repo, "a-first.txt"))).toBe(true);
      expect(await exists(join(world.repo, "gone.txt"))).toBe(false);
      const answer = await landDispatch(world.layout, first);
      expect(answer).toMatchObject({
        landing: "landed",
        changed: true,
        how: "fast-forward",
        commit: firstTip,
      });
      expect(git("rev-parse", "main")).toBe(firstTip);
      await expectLandedOnce(first, firstTip);
      expect(await readFile(join(world.repo, "a-first.txt"), "utf8")).toBe("first\n");
      expect(await landDispatch(world.layout, first)).toMatchObject({ changed: false });

      // Cut short while a merge commit is moved in; the daemon's next start-up finishes it.
      const second = "dispatch-cut-start";
      const secondTip = await finished(second);
      git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "moved");
      const moved = git("rev-parse", "main");
      await landKilled(second);
      expect(await exists(join(world.repo, ".git", "index.lock"))).toBe(true);
      await daemon.stop(0);
      daemon = testDaemon(world);
      await daemon.start();
      await waitFor(
        async () => (await completionOf(world.layout, second))?.landing === "landed" || undefined,
      );
      expect(git("rev-parse", "main^1")).toBe(moved);
      expect(git("rev-parse", "main^2")).toBe(secondTip);
      await expectLandedOnce(second, secondTip);
      expect(await landDispatch(world.layout, second)).toMatchObject({ changed: false, how: "merge" });
    });

    it("a lock someone else took since is never removed: refused, naming it, until it is gone", async () => {
      daemon = testDaemon(world);
      await daemon.start();
      const { landKilled } = await slowCheckout();
      const id = "dispatch-cut-foreign";
      const tip = await finished(id);
      const before = git("rev-parse", "main");
      await landKilled(id);
      // The person removes the lock the crash left, and a git of theirs takes the index.
      const lock = join(world.repo, ".git", "index.lock");
      await rm(lock);
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
        const theirs = (await stat(lock)).ino;
        const error = await landDispatch(world.layout, id).then(
          () => undefined,
          (caught: unknown) => caught as LandRefusal,
        );
        expect(error).toBeInstanceOf(LandRefusal);
        expect(error?.rule).toBe("locked");
        expect(error?.message).toContain(lock);
        expect((await stat(lock)).ino).toBe(theirs);
        expect(git("rev-parse", "main")).toBe(before);
        expect(holder.exitCode).toBeNull();
        // Its holder gone, the lock is still not the landing's to remove.
        holder.kill("SIGKILL");
        await new Promise((resolve) => holder.once("exit", resolve));
        await expect(landDispatch(world.layout, id)).rejects.toThrow(lock);
        expect((await stat(lock)).ino).toBe(theirs);
      } finally {
        holder.kill("SIGKILL");
      }
      await rm(lock);
      expect(await landDispatch(world.layout, id)).toMatchObject({ landing: "landed", changed: true });
      await expectLandedOnce(id, tip);
    });
  });
});

describe("a kill between a landing's record and its audit event", () => {
  it("the next start writes the landed event and the completion's mark once; a discard likewise", async () => {
    daemon = testDaemon(world);
    await daemon.start();
    const ids = ["dispatch-record-landed", "dispatch-record-discarded"];
    for (const id of ids) {
      await submitDispatch(world.layout, dispatchFor(world, id, `commit ${id}.txt`));
      await waitFor(() => completionOf(world.layout, id), 30_000);
      await waitFor(async () =>
        (await readState(world.layout, id))?.status === "finished" ? true : undefined,
      );
    }
    await daemon.stop(0);
    daemon = undefined;
    const [landedId, discardedId] = ids as [string, string];
    expect(await landDispatch(world.layout, landedId)).toMatchObject({ landing: "landed" });
    expect(await discardDispatch(world.layout, discardedId, { force: true })).toMatchObject({
      landing: "discarded",
    });
    // What a kill right after each record leaves: no event, and the completion not yet marked.
    const audit = await readFile(world.layout.dispatch.audit, "utf8");
    await writeFile(
      world.layout.dispatch.audit,
      audit
        .split("\n")
        .filter((line) => !/"event":"(landed|discarded)"/.test(line))
        .join("\n"),
    );
    for (const id of ids) {
      const completion = (await completionOf(world.layout, id)) as Record<string, unknown>;
      await writeFile(
        world.layout.dispatch.completedJson(id),
        `${JSON.stringify({ ...completion, landing: "awaiting" }, null, 2)}\n`,
      );
    }
    const events = async (event: string, id: string) =>
      (await auditOf(world.layout)).filter((entry) => entry.event === event && entry.dispatch_id === id);
    expect(await events("landed", landedId)).toHaveLength(0);
    for (let start = 0; start < 2; start += 1) {
      daemon = testDaemon(world);
      await daemon.start();
      await daemon.stop(0);
      daemon = undefined;
    }
    expect(await events("landed", landedId)).toHaveLength(1);
    expect(await events("discarded", discardedId)).toHaveLength(1);
    expect(await completionOf(world.layout, landedId)).toMatchObject({ landing: "landed" });
    expect(await completionOf(world.layout, discardedId)).toMatchObject({ landing: "discarded" });
  });
});
