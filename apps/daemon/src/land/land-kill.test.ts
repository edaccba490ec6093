import { execFileSync, spawnSync } from "node:child_process";
import { chmod, mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import {
  discardDispatch,
  LandRefusal,
  landDispatch,
  readLanding,
  readMove,
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
import {
  checkoutState,
  killedState,
  landingChild,
  manyFileChange,
  seeded,
  untilExists,
} from "./kill-fixture";

/**
 * A landing killed inside one file's write leaves that file part-written. Git collects a
 * smudge filter's whole output before it creates the file, so a filter that stops half-way
 * leaves no file at all; this filter stands in for git's own write as a kill cut it: it writes
 * the first `armed` bytes of its output at the path git is writing (`%f`), says so (`hit`),
 * and hangs until the landing's process group is killed. `hold` makes it wait for `release`
 * first (saying `held`), and `fail` makes it fail (with `filter.half.required`, git then
 * cannot write the file).
 */
const FILTER = (base: string) => `#!/bin/sh
b=${JSON.stringify(base)}
if [ -e "$b/fail" ]; then exit 1; fi
if [ -e "$b/hold" ]; then
  : > "$b/held"
  while [ ! -e "$b/release" ]; do sleep 0.05; done
  exec cat
fi
if [ -e "$b/armed" ]; then
  n=$(cat "$b/armed")
  rm -f "$b/armed"
  cat > "$b/smudge-in"
  head -c "$n" "$b/smudge-in" > "$1"
  head -c "$n" "$b/smudge-in"
  : > "$b/hit"
  exec sleep 3600
fi
exec cat
`;

let world: TestWorld;
let daemon: Daemon | undefined;
const git = (...args: string[]) =>
  execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8", maxBuffer: 1 << 28 }).trim();
const exists = (path: string) =>
  stat(path).then(
    () => true,
    () => false,
  );
const SLOW = "m-slow.bin";

beforeEach(async () => {
  world = await makeWorld();
  // What `land` outside the daemon reads: this world's repository is trusted.
  await trustInConfig(world);
  await writeFile(join(world.base, "half.sh"), FILTER(world.base));
  await chmod(join(world.base, "half.sh"), 0o755);
  git("config", "filter.half.smudge", `${join(world.base, "half.sh")} %f`);
  git("config", "filter.half.clean", "cat");
  await writeFile(join(world.repo, ".git", "info", "attributes"), `${SLOW} filter=half -text\n`);
  daemon = testDaemon(world);
  await daemon.start();
});

afterEach(async () => {
  await writeFile(join(world.base, "release"), "");
  await daemon?.stop(0);
  daemon = undefined;
  await world.cleanup();
});

/**
 * A finished dispatch whose branch changes `files` files of the checkout (and adds `slow`, a
 * file of `slowBytes` the filter writes), ready to land.
 */
async function finishedChange(
  id: string,
  options: { files?: number; slowBytes?: number; extra?: Record<string, Buffer> } = {},
) {
  const random = seeded(7);
  const slow = Buffer.alloc(options.slowBytes ?? 64 * 1024);
  for (let at = 0; at < slow.length; at += 1) slow[at] = Math.floor(random() * 256);
  const { before, after } = await manyFileChange(world.repo, {
    files: options.files ?? 300,
    seed: 11,
    extra: { [SLOW]: slow, ...options.extra },
  });
  git("branch", `work-${id}`, after);
  await submitDispatch(
    world.layout,
    dispatchFor(world, id, "report", { branch: `work-${id}`, base: "main" }),
  );
  await waitFor(() => completionOf(world.layout, id), 60_000);
  return { before, after, slow };
}

/** Lands `id` in a process of its own, killed with SIGKILL once the filter wrote `bytes` of the slow file. */
async function landKilledInsideSlowFile(id: string, bytes: number) {
  await writeFile(join(world.base, "armed"), String(bytes));
  await rm(join(world.base, "hit"), { force: true });
  const landing = await landingChild(world.base, world.root, id);
  landing.go();
  // A landing that ends before the filter is reached (refused, or failed) says why at once.
  await Promise.race([
    untilExists(join(world.base, "hit"), "the filter half-way through the slow file"),
    landing.exited.then(({ code, signal }) => {
      throw new Error(
        `the landing ended (code ${code}, signal ${signal}) before the filter was reached: ${landing.stderr()}`,
      );
    }),
  ]);
  landing.kill();
  await landing.exited;
}

const landedEvents = async (id: string) =>
  (await auditOf(world.layout)).filter((event) => event.event === "landed" && event.dispatch_id === id);

describe("a landing killed inside a file's write", { timeout: loadBudget(180_000) }, () => {
  it.each([
    { what: "half of a file", size: 64 * 1024, written: 32 * 1024, by: "land" },
    { what: "an empty file", size: 64 * 1024, written: 0, by: "start" },
    { what: "half of a large file", size: 8 * 1024 * 1024, written: 4 * 1024 * 1024, by: "land" },
  ] as const)("leaving $what is finished byte for byte by the next $by", async ({ size, written, by }) => {
    const id = `dispatch-inside-${written}-${by}`;
    const { before, after } = await finishedChange(id, { slowBytes: size });
    await landKilledInsideSlowFile(id, written);

    // Killed where meant: the lock left, HEAD and index as before, files on both sides of the
    // one git was writing, and that one part-written.
    expect(await exists(join(world.repo, ".git", "index.lock"))).toBe(true);
    expect(git("rev-parse", "main")).toBe(before);
    expect((await stat(join(world.repo, SLOW))).size).toBe(written);
    const cut = killedState(world.repo, before, after);
    expect(cut.after).toBeGreaterThan(0);
    expect(cut.before).toBeGreaterThan(0);
    expect((cut.partial ?? 0) + (cut.hole ?? 0)).toBeGreaterThan(0);
    expect(cut.other).toBe(0);

    if (by === "land") {
      const answer = await landDispatch(world.layout, id);
      expect(answer).toMatchObject({ landing: "landed", changed: true, commit: after });
      expect(answer.message).not.toContain("out of the way");
    } else {
      await daemon?.stop(0);
      daemon = testDaemon(world);
      await daemon.start();
      await waitFor(async () => (await completionOf(world.layout, id))?.landing === "landed" || undefined);
    }
    expect(checkoutState(world.repo, [after])).toBe(`at ${after}`);
    expect(await landedEvents(id)).toHaveLength(1);
    expect(await readMove(world.layout, id)).toBeUndefined();
  });

  it("files someone wrote at the landing's paths after the kill are moved out of the way, named, and the landing finishes", async () => {
    const id = "dispatch-inside-edited";
    const { before, after } = await finishedChange(id);
    await landKilledInsideSlowFile(id, 1000);
    const changed = git("diff", "--name-status", "--no-renames", before, after).split("\n");
    const written = changed.find((line) => /^M\td0\//.test(line))?.slice(2) as string;
    const removed = changed.find((line) => /^D\t/.test(line))?.slice(2) as string;
    const notYet = changed.find((line) => /^A\tnew/.test(line))?.slice(2) as string;
    // The person's editor, while the checkout was half-way.
    const theirs: Record<string, string> = {
      [written]: "my edit of a file the landing had written\n",
      [removed]: "my notes, at a path the landing removes\n",
      [notYet]: "my file, at a path the landing had not written yet\n",
    };
    for (const [path, text] of Object.entries(theirs)) {
      await mkdir(dirname(join(world.repo, path)), { recursive: true });
      await writeFile(join(world.repo, path), text);
    }

    const answer = await landDispatch(world.layout, id);
    expect(answer).toMatchObject({ landing: "landed", changed: true, commit: after });
    expect(checkoutState(world.repo, [after])).toBe(`at ${after}`);
    const saved = (await readLanding(world.layout, id))?.saved ?? [];
    expect(saved.map((entry) => entry.path).sort()).toEqual(Object.keys(theirs).sort());
    for (const entry of saved) {
      expect(entry.at.startsWith(join(world.repo, ".git", `gstack-land-${id}-saved`))).toBe(true);
      expect(await readFile(entry.at, "utf8")).toBe(theirs[entry.path]);
      expect(answer.message).toContain(`${entry.path} (now at ${entry.at})`);
    }
    const [landed] = await landedEvents(id);
    expect((landed?.detail as { saved?: unknown[] } | undefined)?.saved).toHaveLength(3);
  });

  it("when it cannot be finished it says where the checkout stands and how to put it back, keeps the lock, and those commands work", async () => {
    const id = "dispatch-inside-stuck";
    const { before, after } = await finishedChange(id);
    await landKilledInsideSlowFile(id, 1000);
    // Now git cannot write the slow file at all.
    await writeFile(join(world.base, "fail"), "");
    git("config", "filter.half.required", "true");

    const refused = await landDispatch(world.layout, id).then(
      () => undefined,
      (error: unknown) => error as LandRefusal,
    );
    expect(refused).toBeInstanceOf(LandRefusal);
    expect(refused?.rule).toBe("unfinished");
    const lock = join(world.repo, ".git", "index.lock");
    expect(refused?.message).toContain("half-way");
    expect(refused?.message).toContain(`keeps ${lock}`);
    expect(refused?.message).toContain(`${git("rev-parse", "--short=12", "main")} (before the landing)`);
    expect(await exists(lock)).toBe(true);
    expect((await readMove(world.layout, id))?.stuck).toBe(refused?.message);
    // The next start says the same in its log, and changes nothing.
    const lines: string[] = [];
    await daemon?.stop(0);
    daemon = testDaemon(world, { log: (line) => lines.push(line) });
    await daemon.start();
    await daemon.stop();
    daemon = undefined;
    expect(lines.find((line) => line.includes("could not be finished"))).toContain("half-way");
    expect(await exists(lock)).toBe(true);

    // The person mends the filter and runs the commands the landing gave, word for word.
    await rm(join(world.base, "fail"));
    const commands = /put the checkout back as it was by hand instead \([^)]*\): (.*?)\. Or to finish/.exec(
      refused?.message ?? "",
    )?.[1];
    expect(commands).toBeDefined();
    const ran = spawnSync("sh", ["-c", commands as string], { encoding: "utf8" });
    expect(ran.status, ran.stderr).toBe(0);
    expect(checkoutState(world.repo, [before])).toBe(`at ${before}`);

    // Landing again starts afresh and lands.
    expect(await landDispatch(world.layout, id)).toMatchObject({
      landing: "landed",
      changed: true,
      commit: after,
    });
    expect(checkoutState(world.repo, [after])).toBe(`at ${after}`);
  });

  it("a discard asked for after the kill finishes the landing first, and says so", async () => {
    const id = "dispatch-inside-discard";
    const { after } = await finishedChange(id);
    await landKilledInsideSlowFile(id, 1000);
    const refused = await discardDispatch(world.layout, id, { force: true }).then(
      () => undefined,
      (error: unknown) => error as LandRefusal,
    );
    expect(refused?.rule).toBe("landed");
    expect(refused?.message).toContain("cut the landing short");
    expect(checkoutState(world.repo, [after])).toBe(`at ${after}`);
    expect(await completionOf(world.layout, id)).toMatchObject({ landing: "landed" });
  });

  it("git killed by a signal inside a large file's write: the landing puts back what git wrote, and the next one lands", async () => {
    const id = "dispatch-inside-limit";
    const random = seeded(3);
    const large = Buffer.alloc(24 * 1024 * 1024);
    for (let at = 0; at < large.length; at += 4096) large[at] = Math.floor(random() * 256);
    const { before, after } = await finishedChange(id, { extra: { "l-large.bin": large } });
    // A file-size limit on the landing process (and so on its git): the kernel stops git with
    // SIGXFSZ when it writes past 4 MiB of the large file, leaving it part-written.
    const landing = await landingChild(world.base, world.root, id, { limitFileBytes: 4 * 1024 * 1024 });
    landing.go();
    const ended = await landing.exited;
    expect(ended.code).toBe(3);
    expect(landing.stderr()).toContain("SIGXFSZ");
    expect(landing.stderr()).toContain("put back");
    expect(checkoutState(world.repo, [before])).toBe(`at ${before}`);
    expect(await readMove(world.layout, id)).toBeUndefined();
    expect(await landDispatch(world.layout, id)).toMatchObject({
      landing: "landed",
      changed: true,
      commit: after,
    });
    expect(checkoutState(world.repo, [after])).toBe(`at ${after}`);
  });
});

describe("a landing finished at start-up", { timeout: loadBudget(180_000) }, () => {
  it("runs beside new work, and a landing into the same checkout waits for it", async () => {
    const other = "dispatch-same-checkout";
    await submitDispatch(world.layout, dispatchFor(world, other, "commit other.txt"));
    await waitFor(() => completionOf(world.layout, other), 60_000);
    const id = "dispatch-finished-at-start";
    const { after } = await finishedChange(id);
    await landKilledInsideSlowFile(id, 1000);

    // The next start: the filter holds the landing half-way until released.
    await daemon?.stop(0);
    await writeFile(join(world.base, "hold"), "");
    daemon = testDaemon(world);
    await daemon.start();
    await untilExists(join(world.base, "held"), "the landing being finished at start-up");
    expect((await completionOf(world.layout, id))?.landing).toBe("awaiting");

    // New work runs meanwhile.
    const fresh = "dispatch-while-landing";
    await submitDispatch(world.layout, dispatchFor(world, fresh, "commit fresh.txt"));
    expect(await waitFor(() => completionOf(world.layout, fresh), 60_000)).toMatchObject({
      status: "completed",
    });
    expect((await completionOf(world.layout, id))?.landing).toBe("awaiting");

    // A landing into the same checkout, asked for meanwhile, waits for the one being finished
    // (without it, it would find the checkout half-way and locked, and refuse).
    const landingOther = landDispatch(world.layout, other);
    await untilExists(
      join(world.layout.dispatch.sessionDir(other), "landing.lock"),
      "the other landing under way",
    );
    await writeFile(join(world.base, "release"), "");
    expect(await landingOther).toMatchObject({ landing: "landed", changed: true, how: "merge" });
    const order = (await auditOf(world.layout))
      .filter((event) => event.event === "landed")
      .map((event) => event.dispatch_id);
    expect(order).toEqual([id, other]);
    expect(git("rev-parse", "main^1")).toBe(after);
    expect(checkoutState(world.repo, [git("rev-parse", "main")])).toBe(`at ${git("rev-parse", "main")}`);
  });
});
