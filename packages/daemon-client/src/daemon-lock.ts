import { link, readFile, rm, writeFile } from "node:fs/promises";
import type { GstackLayout } from "@gstack/contracts";
import { DaemonError } from "./errors";
import { LockHeldError, type LockHolder, type OsLock, takeOsLock } from "./lock/os-lock";

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
    if (error instanceof LockHeldError) {
      const foreign = foreignHolderText(error.holder, layout.root);
      throw foreign ? new DaemonError(foreign) : await heldError(layout, error.holder.pid);
    }
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

/**
 * What to tell the person when the lock's name is held by something that is not a daemon of
 * theirs: a process of another user (its uid, and pid when seen), or one this user cannot see.
 * Undefined when the holder is a process of this user.
 */
export function foreignHolderText(holder: LockHolder, root: string): string | undefined {
  const own = process.getuid?.();
  if (holder.uid !== undefined && holder.uid === own) return undefined;
  if (holder.uid === undefined && holder.pid !== undefined) return undefined;
  if (holder.name === undefined) return undefined;
  const name = JSON.stringify(holder.name);
  const who =
    holder.uid !== undefined
      ? `another user, uid ${holder.uid}${holder.pid !== undefined ? ` (pid ${holder.pid})` : ""}`
      : "a process this user cannot see (another user's, or one in another pid namespace)";
  const stop =
    holder.uid !== undefined && holder.pid !== undefined
      ? `ask that user or the machine's administrator to stop pid ${holder.pid}`
      : `ask the machine's administrator to find and stop the process listening on ${name} (ss -xlp shows it, as root)`;
  return `the daemon's lock name ${name} is held by ${who}, not by a gstack-dispatch daemon of yours, so no daemon can run for ${root}; ${stop}, or use another state root (--root or GSTACK_HOME)`;
}

async function heldError(layout: GstackLayout, seen?: number): Promise<DaemonError> {
  let holder: number | undefined = seen;
  try {
    holder ??= (JSON.parse(await readFile(layout.dispatch.lock, "utf8")) as { pid?: number }).pid;
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
