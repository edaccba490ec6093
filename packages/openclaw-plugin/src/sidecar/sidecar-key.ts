import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { lstat, mkdir, open, readFile, stat } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * Reads the sidecar key from a file only its owner may read, creating one (32 random bytes,
 * hex, mode 0600) when the file is absent. A file others may read is refused, never repaired.
 */
export async function ensureSidecarKey(path: string): Promise<string> {
  const existing = await readSidecarKey(path);
  if (existing !== undefined) return existing;
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const key = randomBytes(32).toString("hex");
  try {
    const handle = await open(path, "wx", 0o600);
    try {
      await handle.writeFile(`${key}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    return key;
  } catch (error) {
    // Another process made it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === "EEXIST") {
      const made = await readSidecarKey(path);
      if (made !== undefined) return made;
    }
    throw error;
  }
}

/** The key in `path`; undefined when the file is absent. Throws for a file others may read or an empty one. */
export async function readSidecarKey(path: string): Promise<string | undefined> {
  let mode: number;
  try {
    mode = (await stat(path)).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  if ((mode & 0o077) !== 0) {
    throw new Error(
      `${path} is readable by others (mode ${(mode & 0o777).toString(8)}); run chmod 600 ${path}`,
    );
  }
  const key = (await readFile(path, "utf8")).trim();
  if (key.length < 16)
    throw new Error(`${path} holds no key (at least 16 characters); delete it to make a new one`);
  return key;
}

/**
 * Why OpenClaw's file secret provider would refuse the key file, or undefined when it would read
 * it: it must be a regular file (not a symlink) with one hard link, owned by this user and
 * neither readable nor writable by group or others. The folder is not checked.
 */
export async function keyFileProblem(path: string): Promise<string | undefined> {
  const info = await lstat(path);
  if (info.isSymbolicLink())
    return `${path} is a symlink, which OpenClaw's file secret provider refuses; put the key file itself there`;
  if (!info.isFile()) return `${path} is not a regular file`;
  if (info.nlink > 1)
    return `${path} has ${info.nlink} hard links, which OpenClaw's file secret provider refuses; copy it to a new 0600 file in its place`;
  if ((info.mode & 0o077) !== 0)
    return `${path} is readable by others (mode ${(info.mode & 0o777).toString(8)}); run chmod 600 ${path}`;
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid)
    return `${path} belongs to uid ${info.uid}, not to the user running OpenClaw (uid ${uid}); OpenClaw's file secret provider refuses it`;
  return undefined;
}

const digest = (text: string) => createHash("sha256").update(text).digest();

/** Whether an `Authorization: Bearer …` header carries the key, compared in constant time. */
export function authorizationMatches(header: string | undefined, key: string): boolean {
  const match = /^Bearer\s+(.+)$/i.exec(header?.trim() ?? "");
  const presented = match?.[1]?.trim() ?? "";
  return timingSafeEqual(digest(presented), digest(key)) && presented.length > 0;
}
