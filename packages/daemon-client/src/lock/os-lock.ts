import {
  closeSync,
  constants,
  fstatSync,
  ftruncateSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
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

/**
 * The process holding the lock, as far as this user can see it. The abstract socket's name is
 * visible to everyone on the machine, so anyone can bind it: `uid` tells a daemon of ours from
 * another user's process. Both are absent when the holder is a process this user cannot see
 * (another user's, when this one is not root) or when the holder let go meanwhile.
 */
export interface LockHolder {
  pid?: number;
  uid?: number;
  /** The lock's name, as `/proc/net/unix` shows it (`@` for the leading zero byte). */
  name?: string;
}

/** Thrown when another process holds the lock. */
export class LockHeldError extends Error {
  constructor(
    message: string,
    readonly holder: LockHolder = {},
  ) {
    super(message);
  }
}

/** The abstract socket name of a state root: its device and inode, so a moved root keeps it. */
async function abstractName(root: string): Promise<string> {
  const { dev, ino } = await stat(root, { bigint: true });
  return `\0gstack-dispatch/${dev}/${ino}`;
}

/**
 * Who listens on the abstract Unix socket `name` (Linux): `/proc/net/unix` gives the listening
 * socket's inode, and the process holding it is the one with a descriptor linked to
 * `socket:[inode]` under `/proc/<pid>/fd` (the pid `hint` is looked at first); its uid is the
 * owner of `/proc/<pid>`. Only processes this user may read are seen: a process of another user
 * stays unseen unless this one is root. Undefined when nothing listens on the name.
 */
export function abstractSocketHolder(name: string, hint?: number): LockHolder | undefined {
  const shown = `@${name.slice(1)}`;
  let inode: string | undefined;
  let table: string;
  try {
    table = readFileSync("/proc/net/unix", "utf8");
  } catch {
    return {};
  }
  for (const line of table.split("\n").slice(1)) {
    // Num RefCount Protocol Flags Type St Inode Path; the path pads an abstract name with "@".
    const fields = line.trim().split(/\s+/);
    const path = fields[7];
    if (!path || !(path === shown || (path.startsWith(shown) && /^@+$/.test(path.slice(shown.length))))) {
      continue;
    }
    // __SO_ACCEPTCON: the socket listens.
    if ((Number.parseInt(fields[3] ?? "0", 16) & 0x10000) === 0) continue;
    inode = fields[6];
    break;
  }
  if (inode === undefined) return undefined;
  const link = `socket:[${inode}]`;
  const holds = (pid: string) => {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      return false;
    }
    return fds.some((fd) => {
      try {
        return readlinkSync(`/proc/${pid}/fd/${fd}`) === link;
      } catch {
        return false;
      }
    });
  };
  const pids = readdirSync("/proc").filter((entry) => /^\d+$/.test(entry));
  const candidates =
    hint !== undefined ? [String(hint), ...pids.filter((pid) => pid !== String(hint))] : pids;
  for (const pid of candidates) {
    if (!holds(pid)) continue;
    try {
      return { pid: Number(pid), uid: statSync(`/proc/${pid}`).uid, name: shown };
    } catch {
      // Gone between the look at its descriptors and its owner.
    }
  }
  return { name: shown };
}

/** `O_EXLOCK` where `open(2)` takes it (macOS, FreeBSD, OpenBSD, NetBSD: 0x20). */
const O_EXLOCK = 0x20;

/**
 * Who holds the lock of `root` now, where the lock is the kernel's: false when no one, else the
 * holder as far as it can be seen (on Linux its pid and uid, which tell a daemon of this user
 * from another user's process holding the name); undefined elsewhere. Takes nothing.
 */
export async function osLockHolder(
  root: string,
  lockFile: string,
  hint?: number,
): Promise<LockHolder | false | undefined> {
  if (process.platform === "linux") {
    let name: string;
    try {
      name = await abstractName(root);
    } catch {
      return false;
    }
    const listening = await new Promise<boolean>((resolve) => {
      const socket = connect({ path: name });
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    return listening ? (abstractSocketHolder(name, hint) ?? {}) : false;
  }
  if (["darwin", "freebsd", "openbsd", "netbsd"].includes(process.platform)) {
    let fd: number;
    try {
      fd = openSync(lockFile, constants.O_RDONLY | constants.O_NONBLOCK | O_EXLOCK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // The lock file lies in the state root, which only its owner can enter: a holder is ours.
      return code === "EWOULDBLOCK" || code === "EAGAIN" ? { uid: process.getuid?.() } : false;
    }
    closeSync(fd);
    return false;
  }
  return undefined;
}

/** The pid a lock file names, when it names one. */
export function describedPid(lockFile: string): number | undefined {
  try {
    const pid = (JSON.parse(readFileSync(lockFile, "utf8")) as { pid?: unknown }).pid;
    return typeof pid === "number" && Number.isInteger(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

export async function takeOsLock(root: string, lockFile: string): Promise<OsLock | undefined> {
  if (process.platform === "linux") return takeAbstractSocket(root, lockFile);
  if (["darwin", "freebsd", "openbsd", "netbsd"].includes(process.platform)) return takeFlock(lockFile);
  return undefined;
}

async function takeAbstractSocket(root: string, lockFile: string): Promise<OsLock> {
  const name = await abstractName(root);
  const server: Server = createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      reject(
        error.code === "EADDRINUSE"
          ? new LockHeldError(
              `the lock ${JSON.stringify(name)} is held`,
              abstractSocketHolder(name, describedPid(lockFile)) ?? {},
            )
          : error,
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
