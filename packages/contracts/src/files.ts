import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { nodeCrypto } from "./lazy";

/**
 * Writes a file so that readers see either the old content or the new, never a mix: the
 * data goes to a temporary file in the same folder, is flushed to disk, then renamed over
 * the target (rename is atomic within one file system).
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  options: { mode?: number } = {},
): Promise<void> {
  const folder = dirname(path);
  await mkdir(folder, { recursive: true });
  const temporary = join(
    folder,
    `.${basename(path)}.${process.pid}.${nodeCrypto().randomBytes(6).toString("hex")}.tmp`,
  );
  const handle = await open(temporary, "wx", options.mode ?? 0o644);
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

/**
 * Appends lines to a file with one `write(2)` on a descriptor opened with `O_APPEND`, so
 * that writers in several processes never tear or interleave a line: the kernel moves to
 * the end and writes the whole buffer under the file's lock.
 */
export async function appendLines(path: string, lines: readonly string[]): Promise<void> {
  if (lines.length === 0) return;
  for (const line of lines) {
    if (line.includes("\n")) throw new TypeError("a line to append must not contain a newline");
  }
  await mkdir(dirname(path), { recursive: true });
  const handle = await open(path, "a");
  try {
    const buffer = Buffer.from(`${lines.join("\n")}\n`, "utf8");
    let written = 0;
    while (written < buffer.length) {
      const { bytesWritten } = await handle.write(buffer, written);
      written += bytesWritten;
    }
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
