import { lstat, readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { compareText } from "./compare-text";
import type { SkillSource } from "./transform-skill";

/** A file the skills read at run time, copied from the user's gstack beside the pack. */
export interface SupportFile {
  content: Uint8Array;
  /** Permission bits of the source, so gstack's bin helpers stay executable. */
  mode: number;
}

/** What the skills read from the gstack folder, and what of it the input lacks. */
export interface SupportFiles {
  /** Paths relative to the gstack folder (`ETHOS.md`, `ship/sections/tests.md`, `bin/gstack-slug`). */
  files: ReadonlyMap<string, SupportFile>;
  /** Referenced paths the input folder does not have (a skills-only copy lacks `bin/`, built binaries). */
  missing: readonly string[];
}

/** Folders copied whole when present: gstack's helpers call each other and their own libraries. */
const WHOLE_FOLDERS = ["bin"];

const GSTACK_PATH = /(?:~|\$HOME|\$\{HOME\})\/\.claude\/skills\/gstack\/([A-Za-z0-9_.\-/]+)/g;

/** Files that are never support files: the skills themselves, generated or their templates. */
function isSkillFile(path: string): boolean {
  return /(?:^|\/)SKILL\.md(?:\.tmpl)?$/.test(path);
}

/**
 * The paths under the gstack folder that skill sources refer to, relative to it and
 * sorted: `~/.claude/skills/gstack/ship/sections/tests.md` gives `ship/sections/tests.md`.
 * References to a skill's own SKILL.md are left out: those become the OpenClaw skills.
 */
export function referencedSupportPaths(sources: readonly Pick<SkillSource, "source">[]): string[] {
  const found = new Set<string>();
  for (const { source } of sources) {
    for (const match of source.matchAll(GSTACK_PATH)) {
      const path = (match[1] ?? "").replace(/[./]+$/, "");
      // Hidden paths (`.feature-prompted-*`, `.git`) are state a skill writes or probes, not files it reads.
      if (path === "" || path.includes("..") || isSkillFile(path) || /(?:^|\/)\./.test(path)) continue;
      found.add(path);
    }
  }
  return [...found].sort(compareText);
}

async function kindOf(path: string): Promise<"file" | "folder" | undefined> {
  try {
    const info = await stat(path);
    return info.isDirectory() ? "folder" : info.isFile() ? "file" : undefined;
  } catch {
    return undefined;
  }
}

async function addFile(files: Map<string, SupportFile>, input: string, path: string): Promise<void> {
  if (files.has(path) || isSkillFile(path)) return;
  const absolute = join(input, path);
  const info = await lstat(absolute);
  const mode = (await stat(absolute)).mode & 0o777;
  if (info.isSymbolicLink() && (await kindOf(absolute)) !== "file") return;
  files.set(path, { content: await readFile(absolute), mode });
}

async function addFolder(files: Map<string, SupportFile>, input: string, path: string): Promise<void> {
  const entries = await readdir(join(input, path), { withFileTypes: true });
  for (const entry of entries.sort((left, right) => compareText(left.name, right.name))) {
    if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
    const child = `${path}/${entry.name}`;
    const kind = await kindOf(join(input, child));
    if (kind === "file") await addFile(files, input, child);
    else if (kind === "folder" && !entry.isSymbolicLink()) await addFolder(files, input, child);
  }
}

/**
 * Reads what the skills read at run time from the user's gstack folder: every file or
 * folder a skill refers to under `~/.claude/skills/gstack/` (and, in turn, what those
 * Markdown files refer to), plus gstack's `bin/` helpers whole. Referenced paths the folder lacks are returned as `missing`, never guessed.
 */
export async function readSupportFiles(
  input: string,
  sources: readonly Pick<SkillSource, "source">[],
): Promise<SupportFiles> {
  const files = new Map<string, SupportFile>();
  const missing: string[] = [];
  for (const folder of WHOLE_FOLDERS) {
    if ((await kindOf(join(input, folder))) === "folder") await addFolder(files, input, folder);
  }
  // Support files that are instructions name further files: follow them too.
  const seen = new Set<string>();
  let pending = referencedSupportPaths(sources);
  while (pending.length > 0) {
    const before = new Set(files.keys());
    for (const path of pending) {
      seen.add(path);
      const kind = await kindOf(join(input, path));
      if (kind === "file") await addFile(files, input, path);
      else if (kind === "folder") await addFolder(files, input, path);
      else missing.push(path);
    }
    const added = [...files].filter(([path]) => !before.has(path) && path.endsWith(".md"));
    pending = referencedSupportPaths(
      added.map(([, file]) => ({ source: new TextDecoder().decode(file.content) })),
    ).filter((path) => !seen.has(path));
  }
  missing.sort(compareText);
  return {
    files: new Map([...files].sort(([left], [right]) => compareText(left, right))),
    missing,
  };
}
