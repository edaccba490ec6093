import { execFile } from "node:child_process";
import { chmod, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { dispatchCommand, makeWorld, type TestWorld } from "./test-support";

/**
 * A `dispatch/` folder the daemon cannot write: as root, the real command runs as another user
 * (uid 65534) against folders root owns; otherwise the folder is made read-only for its owner.
 */
const asRoot = process.getuid?.() === 0;
const OTHER_UID = 65534;

let world: TestWorld;

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  await chmod(world.layout.dispatch.incoming, 0o700).catch(() => {});
  await world.cleanup();
});

function run(args: string[], uid?: number): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...dispatchCommand(), ...args],
      {
        cwd: join(import.meta.dirname, ".."),
        env: { ...process.env, PATH: "/usr/bin:/bin", HOME: world.base, NODE_DISABLE_COMPILE_CACHE: "1" },
        ...(uid !== undefined ? { uid, gid: uid } : {}),
      },
      (error, _stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stderr }),
    );
  });
}

describe("a dispatch/ folder the daemon cannot write", () => {
  it("stops the start with one line naming the folder and what to do, not a bare EPERM", async () => {
    const dispatch = world.layout.dispatch.incoming;
    await mkdir(dispatch, { recursive: true, mode: 0o700 });
    let uid: number | undefined;
    if (asRoot) {
      // Folders of root's, open for others to enter and read, not to write.
      for (const folder of [world.base, world.root, dispatch]) await chmod(folder, 0o755);
      uid = OTHER_UID;
    } else {
      await chmod(dispatch, 0o500);
    }
    const { code, stderr } = await run(["run", "--root", world.root], uid);
    expect(code).toBe(1);
    const line = stderr.trim();
    expect(line.split("\n")).toHaveLength(1);
    expect(line).toContain(`cannot prepare ${join(dispatch)}`);
    expect(line).toContain(
      asRoot ? `${dispatch} belongs to uid 0, not to you (uid ${OTHER_UID})` : "not writable by you",
    );
    expect(line).toContain("--root or GSTACK_HOME");
    expect(line).not.toMatch(/^Error|at .*\(/m);
    // Nothing was made in it.
    expect(await readdir(dispatch)).toEqual([]);
  }, 60_000);
});
