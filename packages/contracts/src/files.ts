import { type FileHandle, mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { nodeCrypto } from "./lazy";

/**
 * Writes a file so that readers see either the old content or the new, never a mix: the
 * data goes to a temporary file in the same folder, is flushed to disk, then renamed over
 * the target (rename is atomic within one file system). A missing folder is created; when
 * `mode` gives nobody but the owner access (0600), with mode 0700.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: { mode?: number } = {},
): Promise<void> {
  const folder = dirname(path);
  const mode = options.mode ?? 0o644;
  let temporary = temporaryName(folder, path);
  let handle: FileHandle;
  try {
    handle = await open(temporary, "wx", mode);
  } catch (error) {
    // The folder is created only when missing, and a name left by an earlier process with the
    // same pid is stepped over: both are rare, so the common write costs no extra call.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "EEXIST") throw error;
    // The folder of a file only its owner may read is made private too.
    if (code === "ENOENT")
      await mkdir(folder, { recursive: true, ...((mode & 0o077) === 0 ? { mode: 0o700 } : {}) });
    temporary = temporaryName(folder, path);
    handle = await open(temporary, "wx", mode);
  }
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await rm(temporary, { force: true });
    throw error;
  }
  await handle.close();
  try {
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

let temporaryPrefix: string | undefined;
let temporaryCount = 0;

/**
 * A hidden name beside `path` that no other write uses: the process id, a random part drawn
 * once per process (pids are reused) and a counter. The file is opened with O_EXCL anyway.
 */
function temporaryName(folder: string, path: string): string {
  temporaryPrefix ??= `${process.pid}.${nodeCrypto().randomBytes(6).toString("hex")}`;
  temporaryCount += 1;
  return join(folder, `.${basename(path)}.${temporaryPrefix}.${temporaryCount.toString(36)}.tmp`);
}

/**
 * Appends lines to a file with one `write(2)` on a descriptor opened with `O_APPEND`, so
 * that writers in several processes never tear or interleave a line: the kernel moves to
 * the end and writes the whole buffer under the file's lock. A write that fails partway (a full
 * disk) leaves nothing of the lines behind: the part written is truncated off again.
 */
export async function appendLines(path: string, lines: readonly string[]): Promise<void> {
  if (lines.length === 0) return;
  for (const line of lines) {
    if (line.includes("\n")) throw new TypeError("a line to append must not contain a newline");
  }
  let handle: FileHandle;
  try {
    handle = await open(path, "a");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    await mkdir(dirname(path), { recursive: true });
    handle = await open(path, "a");
  }
  const buffer = Buffer.from(`${lines.join("\n")}\n`, "utf8");
  let written = 0;
  try {
    while (written < buffer.length) {
      const { bytesWritten } = await handle.write(buffer, written);
      written += bytesWritten;
    }
  } catch (error) {
    // A full disk can take part of the buffer and refuse the rest: a line cut short would run
    // into the next one appended and spoil both. The part written is taken back off the end,
    // so the file ends with whole lines and the caller may append the same lines again.
    if (written > 0) {
      const { size } = await handle.stat();
      await handle.truncate(Math.max(0, size - written)).catch(() => undefined);
    }
    throw error;
  } finally {
    await handle.close();
  }
}

/** Appends values as JSON Lines (see {@link appendLines}). */
export async function appendJsonLines(path: string, values: readonly unknown[]): Promise<void> {
  await appendLines(
    path,
    values.map((value) => JSON.stringify(value)),
  );
}
