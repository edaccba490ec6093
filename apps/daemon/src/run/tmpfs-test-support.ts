import { execFileSync } from "node:child_process";
import { appendFile } from "node:fs/promises";

/** Whether this machine lets a test mount a small tmpfs (root on Linux). */
export function canMountTmpfs(): boolean {
  if (process.platform !== "linux" || process.getuid?.() !== 0) return false;
  try {
    execFileSync(
      "sh",
      ["-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d && rmdir $d"],
      {
        stdio: "ignore",
      },
    );
    return true;
  } catch {
    return false;
  }
}

/** Writes zeros into `path` until the file system has no room left. */
export async function fill(path: string): Promise<void> {
  for (const size of [256 * 1024, 16 * 1024, 1024, 64]) {
    const chunk = Buffer.alloc(size);
    for (;;) {
      try {
        await appendFile(path, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOSPC") break;
        throw error;
      }
    }
  }
}
