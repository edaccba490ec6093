import { lstat, readdir, readFile } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { openClawLayout } from "@gstack/contracts";
import type { ParsedLearnings } from "./parse-learnings";
import { parseLearnings } from "./parse-learnings";

/** Reads a file as UTF-8, or returns undefined when it does not exist. */
export async function readTextIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Reads a file's bytes, or returns undefined when it does not exist. */
export async function readBytesIfPresent(path: string): Promise<Buffer | undefined> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Reads and parses a gstack learnings.jsonl; a missing file has no entries. */
export async function readLearningsFile(path: string): Promise<ParsedLearnings & { text: string }> {
  const text = (await readTextIfPresent(path)) ?? "";
  return { ...parseLearnings(text, path), text };
}

/** One Markdown file of OpenClaw's memory. */
export interface MemoryFileRef {
  /** Absolute path. */
  path: string;
  /** Path relative to the workspace with `/` separators, e.g. `memory/2026-11-21.md`. */
  relative: string;
}

/**
 * Lists the files OpenClaw's memory indexer reads: `MEMORY.md` and every `*.md` under
 * `memory/`, in a stable order. Symbolic links (files or folders) are skipped, as
 * OpenClaw skips them.
 */
export async function listMemoryFiles(workspace: string): Promise<MemoryFileRef[]> {
  const layout = openClawLayout(workspace);
  const found: MemoryFileRef[] = [];
  const toRef = (path: string): MemoryFileRef => ({
    path,
    relative: relative(workspace, path).split(sep).join("/"),
  });
  const index = await lstat(layout.memoryIndex).catch(() => undefined);
  if (index?.isFile()) found.push(toRef(layout.memoryIndex));
  const walk = async (folder: string): Promise<void> => {
    let entries: import("node:fs").Dirent[];
    try {
      entries = await readdir(folder, { withFileTypes: true });
    } catch (error) {
      if (
        (error as NodeJS.ErrnoException).code === "ENOENT" ||
        (error as NodeJS.ErrnoException).code === "ENOTDIR"
      ) {
        return;
      }
      throw error;
    }
    entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    for (const entry of entries) {
      if (entry.isSymbolicLink()) continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (entry.isFile() && entry.name.toLowerCase().endsWith(".md")) found.push(toRef(path));
    }
  };
  const memoryFolder = await lstat(layout.memoryDir).catch(() => undefined);
  if (memoryFolder?.isDirectory()) await walk(layout.memoryDir);
  return found;
}
