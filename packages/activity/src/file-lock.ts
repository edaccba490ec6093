import { mkdir, open, readFile, rm, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { ActivityError } from "./activity-error";

/**
 * Runs `task` while holding an exclusive lock file (created with `O_EXCL`, holding the
 * owner's pid). A lock left by a process that no longer exists is taken over; a live
 * holder is waited for up to `timeoutMs`, then an {@link ActivityError} `import-busy`.
 */
export async function withFileLock<T>(
  path: string,
  task: () => Promise<T>,
  options: { timeoutMs?: number } = {},
): Promise<T> {
  await mkdir(dirname(path), { recursive: true });
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  for (;;) {
    try {
      const handle = await open(path, "wx", 0o644);
      try {
        await handle.writeFile(`${process.pid}\n`);
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const holder = await readHolder(path);
    if (holder !== undefined ? !isAlive(holder) : await leftEmpty(path)) {
      await rm(path, { force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new ActivityError(
        "import-busy",
        `another import${holder ? ` (pid ${holder})` : ""} holds ${path}; try again when it has finished`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  try {
    return await task();
  } finally {
    await rm(path, { force: true });
  }
}

async function readHolder(path: string): Promise<number | undefined> {
  try {
    const pid = Number.parseInt(await readFile(path, "utf8"), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A lock file still without a pid after a few seconds was left by a writer that died. */
async function leftEmpty(path: string): Promise<boolean> {
  try {
    return Date.now() - (await stat(path)).mtimeMs > 5_000;
  } catch {
    return false;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
