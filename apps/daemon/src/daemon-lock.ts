import { link, readFile, rm, stat, writeFile } from "node:fs/promises";
import { type GstackLayout, processAlive } from "@gstack/contracts";
import { DaemonError } from "./errors";

/** A lock file without a readable pid is taken over once it is this old. */
const UNREADABLE_LOCK_GRACE_MS = 5_000;

/** Lock files held by daemons in this process. */
const heldLocks = new Set<string>();

/**
 * Takes `dispatch/.daemon.lock`. The content is written to a private file first and then
 * hard-linked to the lock's name, which fails when the name exists: the lock file is never
 * seen empty, so a start paused between create and write cannot be mistaken for a dead one.
 * A lock whose pid is gone is taken over; one without a readable pid only once it is older
 * than a few seconds (written by a daemon of an older version that died mid-write).
 *
 * Not `withFileLock` from contracts: that lock is held for one task and judged stale when
 * not refreshed, while this one is held for the daemon's whole life and read by people.
 */
export async function takeDaemonLock(layout: GstackLayout): Promise<void> {
  const path = layout.dispatch.lock;
  const draft = `${path}.${process.pid}.${Date.now()}`;
  await writeFile(draft, `${JSON.stringify({ pid: process.pid, started_at: new Date().toISOString() })}\n`, {
    mode: 0o600,
  });
  try {
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        await link(draft, path);
        heldLocks.add(path);
        return;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      let holder: number | undefined;
      let modifiedMs = Date.now();
      try {
        modifiedMs = (await stat(path)).mtimeMs;
        holder = (JSON.parse(await readFile(path, "utf8")) as { pid?: number }).pid;
      } catch {}
      const ours = holder === process.pid && heldLocks.has(path);
      if (holder !== undefined && (ours || (holder !== process.pid && processAlive(holder)))) {
        throw new DaemonError(
          `another gstack-dispatch daemon (pid ${holder}) is already running for ${layout.root}`,
        );
      }
      if (holder === undefined && Date.now() - modifiedMs < UNREADABLE_LOCK_GRACE_MS) {
        throw new DaemonError(
          `another gstack-dispatch daemon is starting for ${layout.root} (${path} has no pid yet)`,
        );
      }
      await rm(path, { force: true });
    }
    throw new DaemonError(`could not take the daemon lock ${path}`);
  } finally {
    await rm(draft, { force: true });
  }
}

/** Gives up the lock taken by {@link takeDaemonLock}. */
export async function releaseDaemonLock(layout: GstackLayout): Promise<void> {
  heldLocks.delete(layout.dispatch.lock);
  await rm(layout.dispatch.lock, { force: true });
}
