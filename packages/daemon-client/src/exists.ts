import { access, lstat } from "node:fs/promises";

/** True when something is at `path` (following symbolic links); any error reads as "no". */
export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** True when `path` itself is there, a dangling symbolic link included; any error reads as "no". */
export async function entryExists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}
