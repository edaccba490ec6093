import { spawnSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LockTimeoutError } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LearningsError } from "./errors";
import { withFileLock } from "./file-lock";

let folder: string;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), "learnings-lock-"));
});

afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

describe("withFileLock", () => {
  it("runs tasks one after another and releases the lock when a task throws", async () => {
    const lock = join(folder, "x.lock");
    const order: string[] = [];
    const task = (name: string) => async () => {
      order.push(`${name} in`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      order.push(`${name} out`);
    };
    await Promise.all([withFileLock(lock, task("a")), withFileLock(lock, task("b"))]);
    expect(order).toHaveLength(4);
    expect(order[0]!.slice(0, 1)).toBe(order[1]!.slice(0, 1));
    await expect(withFileLock(lock, () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await withFileLock(lock, async () => "free again")).toBe("free again");
  });

  it("takes over a lock left by a process that has died", async () => {
    const lock = join(folder, "x.lock");
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
      encoding: "utf8",
    });
    await writeFile(lock, `${dead.stdout} 2026-11-22T00:00:00.000Z`);
    expect(await withFileLock(lock, async () => readFile(lock, "utf8"))).toMatch(
      new RegExp(`^${process.pid} `),
    );
  });

  it("gives up with a typed error while a live process holds the lock", async () => {
    const lock = join(folder, "x.lock");
    await writeFile(lock, `${process.pid} now`);
    const error = await withFileLock(lock, async () => "never", { timeoutMs: 100 }).catch((caught) => caught);
    expect(LearningsError.isInstance(error)).toBe(true);
    expect(error.code).toBe("lock-timeout");
    expect(error.file).toBe(lock);
    expect(error.message).toContain(`pid ${process.pid}`);
    expect(LockTimeoutError.isInstance(error.cause)).toBe(true);
  });
});
