import { readFileSync } from "node:fs";
import { mkdir, open, stat, unlink } from "node:fs/promises";
import { dirname } from "node:path";

const marker = Symbol.for("@gstack/contracts.LockTimeoutError");

/** A lock file without a readable pid is taken over once it is this old (its writer died between create and write). */
const UNREADABLE_GRACE_MS = 5_000;
/** A breaker file lives for a few file-system calls; one older than this was left by a crash. */
const BREAKER_STALE_MS = 5_000;
/** Longest pause between two attempts to take a busy lock. */
const MAX_BACKOFF_MS = 250;

/** How long to wait for a lock and when a held lock counts as abandoned. */
export interface FileLockOptions {
  /** Give up with a {@link LockTimeoutError} after this many milliseconds (default 30 s). */
  timeoutMs?: number;
  /**
   * A lock not refreshed for this many milliseconds is taken over even when its holder's pid
   * still answers (default 60 s). The holder refreshes its lock's time while its task runs,
   * so a long task is never judged stale while its process is alive and responsive.
   */
  staleMs?: number;
}

/**
 * Thrown by {@link withFileLock} when another holder kept the lock for the whole wait.
 * Names the lock file and, when the lock file says so, the pid of the holder.
 */
export class LockTimeoutError extends Error {
  readonly [marker] = true;
  override readonly name = "LockTimeoutError";
  /** The lock file. */
  readonly path: string;
  /** The pid written in the lock file, when it held one. */
  readonly holderPid: number | undefined;
  /** How long the caller waited, in milliseconds. */
  readonly timeoutMs: number;

  constructor(options: { path: string; holderPid?: number | undefined; timeoutMs: number }) {
    const holder = options.holderPid === undefined ? "another process" : `pid ${options.holderPid}`;
    super(`${options.path}: still held by ${holder} after waiting ${options.timeoutMs} ms`);
    this.path = options.path;
    this.holderPid = options.holderPid;
    this.timeoutMs = options.timeoutMs;
  }

  /** True for a LockTimeoutError from any copy of this package. */
  static isInstance(value: unknown): value is LockTimeoutError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}

/** What a lock file looked like when it was judged: enough to tell whether it is still the same file. */
interface LockSnapshot {
  /** The file's text, or undefined when it could not be read. */
  content: string | undefined;
  inode: number;
  modifiedMs: number;
  /** The pid at the start of the text, when there is a valid one. */
  pid: number | undefined;
}

/** A lock file this process created. */
interface HeldLock {
  path: string;
  content: string;
  inode: number;
  handle: Awaited<ReturnType<typeof open>>;
}

/**
 * Runs `task` while holding an exclusive lock file, and releases the lock when the task
 * settles (also when it throws).
 *
 * The lock is created with `O_EXCL` and holds `pid iso-time`. Waiters retry with a jittered
 * exponential back-off. A lock is taken over when its holder's pid no longer exists, when it
 * holds no readable pid and is older than a few seconds, or when it has not been refreshed
 * for `staleMs`. Only one waiter at a time may remove a stale lock: it must hold the
 * `O_EXCL` breaker file `path + ".break"` and re-check that the lock file is still the one
 * it judged (same content, same inode), so two waiters facing the same stale lock never
 * both end up holding it. On release only our own lock file is removed.
 *
 * @throws LockTimeoutError when the lock stayed busy for `timeoutMs`.
 */
export async function withFileLock<T>(
  path: string,
  task: () => Promise<T>,
  options: FileLockOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const staleMs = options.staleMs ?? 60_000;
  const held = await acquire(path, timeoutMs, staleMs);
  const refresh = setInterval(
    () => {
      const now = new Date();
      held.handle.utimes(now, now).catch(() => undefined);
    },
    Math.max(10, Math.floor(staleMs / 3)),
  );
  refresh.unref();
  try {
    return await task();
  } finally {
    clearInterval(refresh);
    await release(held);
  }
}

async function acquire(path: string, timeoutMs: number, staleMs: number): Promise<HeldLock> {
  await mkdir(dirname(path), { recursive: true });
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    const held = await tryCreate(path);
    if (held) return held;
    const snapshot = await inspect(path);
    if (snapshot === undefined) continue;
    if (isStale(snapshot, staleMs, UNREADABLE_GRACE_MS)) {
      if (await breakStaleLock(path, snapshot)) continue;
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new LockTimeoutError({ path, holderPid: snapshot.pid, timeoutMs });
    const backoff = Math.min(MAX_BACKOFF_MS, 5 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random());
    await sleep(Math.min(backoff, remaining));
  }
}

/** Creates the lock file; undefined when it already exists. */
async function tryCreate(path: string): Promise<HeldLock | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "wx", 0o644);
  } catch (error) {
    if (errorCode(error) === "EEXIST") return undefined;
    if (errorCode(error) === "ENOENT") {
      await mkdir(dirname(path), { recursive: true });
      return undefined;
    }
    throw error;
  }
  const content = `${process.pid} ${new Date().toISOString()}`;
  let inode: number | undefined;
  try {
    inode = (await handle.stat()).ino;
    await handle.writeFile(content);
    // A writer slower than the grace period may have lost its empty file to a waiter.
    const current = await stat(path).catch(() => undefined);
    if (current?.ino === inode) return { path, content, inode, handle };
  } catch (error) {
    await handle.close().catch(() => undefined);
    const current = await stat(path).catch(() => undefined);
    if (inode !== undefined && current?.ino === inode) await unlink(path).catch(() => undefined);
    throw error;
  }
  await handle.close().catch(() => undefined);
  return undefined;
}

async function release(held: HeldLock): Promise<void> {
  await held.handle.close().catch(() => undefined);
  await removeIfSame(held.path, held);
}

/** Removes `path` only while it is still the file described by `expected` (same inode and text). */
async function removeIfSame(
  path: string,
  expected: { content: string | undefined; inode: number },
): Promise<boolean> {
  const current = await inspect(path);
  if (current === undefined || current.inode !== expected.inode || current.content !== expected.content)
    return false;
  try {
    await unlink(path);
    return true;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return false;
    throw error;
  }
}

/**
 * Removes the stale lock described by `judged` while holding the breaker file, so only one
 * waiter removes it. True when the lock is gone (removed by us or released meanwhile).
 */
async function breakStaleLock(path: string, judged: LockSnapshot): Promise<boolean> {
  const breakerPath = `${path}.break`;
  let breaker = await tryCreate(breakerPath);
  if (!breaker) {
    const other = await inspect(breakerPath);
    if (other !== undefined && Date.now() - other.modifiedMs > BREAKER_STALE_MS) {
      await removeIfSame(breakerPath, other);
    }
    breaker = await tryCreate(breakerPath);
    if (!breaker) return false;
  }
  try {
    const current = await inspect(path);
    if (current === undefined) return true;
    if (current.inode !== judged.inode || current.content !== judged.content) return false;
    return await removeIfSame(path, judged);
  } finally {
    await release(breaker);
  }
}

function isStale(snapshot: LockSnapshot, staleMs: number, unreadableGraceMs: number): boolean {
  const age = Date.now() - snapshot.modifiedMs;
  if (age > staleMs) return true;
  if (snapshot.pid === undefined) return age > unreadableGraceMs;
  return !processAlive(snapshot.pid);
}

/**
 * Reads the lock file's text and identity through one descriptor, so text and inode belong
 * to the same file; undefined when there is no lock file.
 */
async function inspect(path: string): Promise<LockSnapshot | undefined> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "r");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    // Unreadable (e.g. permissions): judge it by identity and age alone.
    const info = await stat(path).catch(() => undefined);
    if (info === undefined) return undefined;
    return { content: undefined, inode: info.ino, modifiedMs: info.mtimeMs, pid: undefined };
  }
  try {
    const info = await handle.stat();
    const content = await handle.readFile("utf8");
    return { content, inode: info.ino, modifiedMs: info.mtimeMs, pid: pidOf(content) };
  } finally {
    await handle.close().catch(() => undefined);
  }
}

function pidOf(content: string | undefined): number | undefined {
  const first = content?.trim().split(/\s+/)[0];
  if (first === undefined || !/^\d+$/.test(first)) return undefined;
  const pid = Number(first);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

/**
 * True when a process with this pid is running: one owned by another user counts, a zombie
 * does not. A zombie has ended and only waits for its parent to collect its exit status, which an
 * orphan's new parent (pid 1) may take seconds to do; it holds no lock and runs nothing more.
 * Zombies are told apart on Linux (by /proc); elsewhere every pid the kernel knows counts.
 */
export function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (error) {
    if (errorCode(error) !== "EPERM") return false;
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  if (process.platform !== "linux") return false;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    // Gone since the signal, or /proc is not there to ask: the signal's answer stands.
    return false;
  }
  // The state is the first field after the command name, which may itself hold ") ".
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  return state === "Z" || state === "X";
}

function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function sleep(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}
