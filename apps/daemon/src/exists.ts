import { access } from "node:fs/promises";

/** True when something is at `path` (following symbolic links); any error reads as "no". */
export async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
