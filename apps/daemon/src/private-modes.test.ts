import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { ensurePrivateFile, submitDispatch } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "./daemon";
import { useDaemonWorld } from "./daemon-test-world";
import { completionOf, dispatchFor, type TestWorld, waitFor } from "./test-support";

const daemonWorld = useDaemonWorld();
let world: TestWorld;
let daemon: Daemon | undefined;
let umask: number;

beforeEach(() => {
  world = daemonWorld.world;
  daemon = undefined;
  umask = process.umask(0o022);
});

afterEach(async () => {
  await daemon?.stop(0);
  process.umask(umask);
});

async function walk(folder: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    found.push(path);
    if (entry.isDirectory()) found.push(...(await walk(path)));
  }
  return found;
}

describe("the daemon's state under umask 022", () => {
  it("is private to the user: folders 0700, files 0600", async () => {
    daemon = await daemonWorld.start();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-private", "commit private.txt"));
    await waitFor(() => completionOf(world.layout, "dispatch-private"));
    await daemon.stop(0);
    daemon = undefined;
    const loose: string[] = [];
    for (const path of [world.layout.dispatch.incoming, ...(await walk(world.layout.dispatch.incoming))]) {
      const mode = (await stat(path)).mode & 0o777;
      if ((mode & 0o077) !== 0) loose.push(`${path.slice(world.root.length)} ${mode.toString(8)}`);
    }
    expect(loose).toEqual([]);
  });

  it("activity, learnings and worktrees are private too: folders 0700, files 0600", async () => {
    daemon = await daemonWorld.start();
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-private-2", "commit private.txt"));
    await waitFor(() => completionOf(world.layout, "dispatch-private-2"));
    await daemon.stop(0);
    daemon = undefined;
    const modeOf = async (path: string) => ((await stat(path)).mode & 0o777).toString(8);
    const activity = join(world.root, "activity");
    const worktrees = join(world.root, "worktrees");
    const checked: string[] = [];
    for (const folder of [
      activity,
      worktrees,
      ...(await readdir(worktrees)).map((name) => join(worktrees, name)),
    ]) {
      checked.push(`${folder.slice(world.root.length)} ${await modeOf(folder)}`);
    }
    for (const file of (await walk(activity)).filter((path) => path.endsWith(".jsonl"))) {
      checked.push(`${file.slice(world.root.length)} ${await modeOf(file)}`);
    }
    expect(checked.length).toBeGreaterThanOrEqual(4);
    for (const line of checked) expect(line).toMatch(line.includes(".jsonl") ? / 600$/ : / 700$/);
  });

  it("a learnings file is made private with its folders", async () => {
    const path = world.layout.project("acme").learnings;
    await ensurePrivateFile(path);
    expect(((await stat(path)).mode & 0o777).toString(8)).toBe("600");
    expect(((await stat(world.layout.project("acme").dir)).mode & 0o777).toString(8)).toBe("700");
    expect(((await stat(world.layout.projects)).mode & 0o777).toString(8)).toBe("700");
  });
});
