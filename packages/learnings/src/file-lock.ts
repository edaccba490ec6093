import { open, readFile, stat, unlink } from "node:fs/promises";
import { LearningsError } from "./errors";

/** How long to wait for a lock and when a held lock counts as abandoned. */
export interface LockOptions {
  /** Give up after this many milliseconds (default 30 s). */
  timeoutMs?: number;
  /** A lock file older than this whose holder cannot be seen is removed (default 60 s). */
  staleMs?: number;
}

function holderIsAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function removeIfStale(path: string, staleMs: number): Promise<void> {
  let content: string;
  let modified: number;
  try {
    content = await readFile(path, "utf8");
    modified = (await stat(path)).mtimeMs;
  } catch {
    return;
  }
  const pid = Number(content.split(" ")[0]);
  const abandoned = content !== "" && !holderIsAlive(pid);
  const expired = Date.now() - modified > staleMs;
  if (!abandoned && !expired) return;
  // Remove only the lock we judged: if another process took it meanwhile, leave theirs.
  const again = await readFile(path, "utf8").catch(() => undefined);
  if (again === content) await unlink(path).catch(() => undefined);
}

/**
 * Runs `task` while holding an exclusive lock file (created with `O_EXCL`, holding the
 * owner's pid). Other processes wait their turn; a lock left by a process that died is
 * taken over. The lock is released even when `task` throws.
 */
export async function withFileLock<T>(
  path: string,
  task: () => Promise<T>,
  options: LockOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const staleMs = options.staleMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(path, "wx", 0o644);
      try {
        await handle.writeFile(`${process.pid} ${new Date().toISOString()}`);
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (Date.now() > deadline) {
        throw new LearningsError(
          "lock-timeout",
          `${path}: another sync has held this lock for over ${timeoutMs} ms`,
          {
            file: path,
          },
        );
      }
      await removeIfStale(path, staleMs);
      await new Promise((resolve) =>
        setTimeout(resolve, Math.min(200, 5 + attempt * 5) * (0.5 + Math.random())),
      );
    }
  }
  try {
    return await task();
  } finally {
    await unlink(path).catch(() => undefined);
  }
}
