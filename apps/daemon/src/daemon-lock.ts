import { link, readFile, rm, writeFile } from "node:fs/promises";
import type { GstackLayout } from "@gstack/contracts";
import { DaemonError } from "./errors";
import { LockHeldError, type OsLock, takeOsLock } from "./lock/os-lock";

/** Locks held by daemons in this process, by lock file. */
const heldLocks = new Map<string, OsLock | "file">();

/**
 * Takes the single-instance lock of a state root. The lock itself is held by the kernel (see
 * `lock/os-lock.ts`: an abstract Unix socket on Linux, `flock` through `O_EXLOCK` on macOS),
 * so it ends with the process however it dies and two daemons starting at once cannot both
 * hold it; nothing is ever judged stale. `dispatch/.daemon.lock` then says who holds it (pid,
 * start time) for people and for the refusal message.
 *
 * On a platform with neither, the file alone is the lock (exclusive create); a file left by a
 * daemon that died is never taken over by itself: the refusal says to remove it.
 */
export async function takeDaemonLock(layout: GstackLayout): Promise<void> {
  const path = layout.dispatch.lock;
  const description = `${JSON.stringify({ pid: process.pid, started_at: new Date().toISOString() })}\n`;
  if (heldLocks.has(path)) throw await heldError(layout);
  let lock: OsLock | undefined;
  try {
    lock = await takeOsLock(layout.root, path);
  } catch (error) {
    if (error instanceof LockHeldError) throw await heldError(layout);
    throw error;
  }
  if (lock) {
    heldLocks.set(path, lock);
    await lock.describe(description);
    return;
  }
  const draft = `${path}.${process.pid}.${Date.now()}`;
  await writeFile(draft, description, { mode: 0o600 });
  try {
    await link(draft, path);
    heldLocks.set(path, "file");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const refusal = await heldError(layout);
    throw new DaemonError(`${refusal.message} (if none runs, remove ${path})`);
  } finally {
    await rm(draft, { force: true });
  }
}

async function heldError(layout: GstackLayout): Promise<DaemonError> {
  let holder: number | undefined;
  try {
    holder = (JSON.parse(await readFile(layout.dispatch.lock, "utf8")) as { pid?: number }).pid;
  } catch {}
  return new DaemonError(
    `another gstack-dispatch daemon${holder !== undefined ? ` (pid ${holder})` : ""} is already running for ${layout.root}`,
  );
}

/** Gives up the lock taken by {@link takeDaemonLock}. */
export async function releaseDaemonLock(layout: GstackLayout): Promise<void> {
  const path = layout.dispatch.lock;
  const lock = heldLocks.get(path);
  heldLocks.delete(path);
  if (lock === undefined) return;
  if (lock === "file") await rm(path, { force: true });
  else await lock.release();
}
