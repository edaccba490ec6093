import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  openSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { rm, stat } from "node:fs/promises";
import { connect, createServer, type Server } from "node:net";
import { writeFileAtomic } from "@gstack/contracts";

/**
 * A lock the kernel holds for this process and drops the moment it dies (kill -9 included), so
 * no daemon ever has to judge whether a lock left behind is stale, and two starting at once
 * cannot both get it.
 *
 * - Linux: a listening Unix socket in the abstract namespace, named after the device and inode
 *   of the state root. Binding a name is atomic; the name vanishes with the process's last
 *   descriptor. Abstract names belong to a network namespace: two daemons in different
 *   namespaces (containers) sharing one state root are not told apart.
 * - macOS and the BSDs: `open(2)` with `O_EXLOCK | O_NONBLOCK` on the lock file, an exclusive
 *   `flock` taken with the open; then the descriptor is checked to still be the file at that
 *   name (one removed between open and lock would be a lock on nothing).
 * - Elsewhere: `undefined`; the caller uses an exclusive create that is never taken over.
 */
export interface OsLock {
  /** How it is held, for the README and messages. */
  readonly kind: "abstract-socket" | "flock";
  /** Writes what people read in the lock file (the holder's pid), without giving the lock up. */
  describe(text: string): Promise<void>;
  /** Removes the lock file and gives the lock up. */
  release(): Promise<void>;
}

/** Thrown when another process holds the lock. */
export class LockHeldError extends Error {}

/** `O_EXLOCK` where `open(2)` takes it (macOS, FreeBSD, OpenBSD, NetBSD: 0x20). */
const O_EXLOCK = 0x20;

/**
 * Whether a daemon holds the lock of `root` now: true or false where the lock is the kernel's,
 * undefined elsewhere. Takes nothing.
 */
export async function osLockHeld(root: string, lockFile: string): Promise<boolean | undefined> {
  if (process.platform === "linux") {
    let name: string;
    try {
      const { dev, ino } = await stat(root, { bigint: true });
      name = `\0gstack-dispatch/${dev}/${ino}`;
    } catch {
      return false;
    }
    return new Promise((resolve) => {
      const socket = connect({ path: name });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
  }
  if (["darwin", "freebsd", "openbsd", "netbsd"].includes(process.platform)) {
    let fd: number;
    try {
      fd = openSync(lockFile, constants.O_RDONLY | constants.O_NONBLOCK | O_EXLOCK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return code === "EWOULDBLOCK" || code === "EAGAIN";
    }
    closeSync(fd);
    return false;
  }
  return undefined;
}

export async function takeOsLock(root: string, lockFile: string): Promise<OsLock | undefined> {
  if (process.platform === "linux") return takeAbstractSocket(root, lockFile);
  if (["darwin", "freebsd", "openbsd", "netbsd"].includes(process.platform)) return takeFlock(lockFile);
  return undefined;
}

async function takeAbstractSocket(root: string, lockFile: string): Promise<OsLock> {
  const { dev, ino } = await stat(root, { bigint: true });
  const name = `\0gstack-dispatch/${dev}/${ino}`;
  const server: Server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        error.code === "EADDRINUSE" ? new LockHeldError(`the lock ${JSON.stringify(name)} is held`) : error,
      );
    });
    server.listen({ path: name, exclusive: true }, () => resolve());
  });
  // The lock must not keep a stopped daemon's process alive.
  server.unref();
  return {
    kind: "abstract-socket",
    describe: (text) => writeFileAtomic(lockFile, text, { mode: 0o600 }),
    release: async () => {
      await rm(lockFile, { force: true });
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function takeFlock(lockFile: string): OsLock {
  for (;;) {
    let fd: number;
    try {
      fd = openSync(lockFile, constants.O_RDWR | constants.O_CREAT | constants.O_NONBLOCK | O_EXLOCK, 0o600);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "EWOULDBLOCK" || code === "EAGAIN") throw new LockHeldError(`${lockFile} is locked`);
      throw error;
    }
    let same = false;
    try {
      const held = fstatSync(fd);
      const named = statSync(lockFile);
      same = held.ino === named.ino && held.dev === named.dev;
    } catch {}
    if (same) {
      return {
        kind: "flock",
        // Written in place: a file renamed over this one would be a new, unlocked file.
        describe: async (text) => {
          ftruncateSync(fd, 0);
          writeSync(fd, text, 0);
        },
        // Removed while still locked; a daemon that opened it meanwhile sees the name gone.
        release: async () => {
          try {
            unlinkSync(lockFile);
          } catch {}
          closeSync(fd);
        },
      };
    }
    // The file was removed by its last holder between our open and our lock: lock the new one.
    closeSync(fd);
  }
}
