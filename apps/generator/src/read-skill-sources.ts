import { readdir, readFile, realpath } from "node:fs/promises";
import { join } from "node:path";
import { GeneratorError } from "./generator-error";
import { type ResolverSet, resolveTemplate } from "./resolve-template";
import type { SkillSource } from "./transform-skill";

/** How to read a gstack folder. */
export interface ReadSourcesOptions {
  /**
   * Resolvers for `SKILL.md.tmpl` templates. When given, a skill folder's template is used
   * (and its generated SKILL.md ignored); without resolvers only SKILL.md files are read.
   */
  resolvers?: ResolverSet;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** Offset of the first byte that does not start or continue a UTF-8 sequence, or -1. */
function firstInvalidByte(bytes: Uint8Array): number {
  let index = 0;
  while (index < bytes.length) {
    const lead = bytes[index] ?? 0;
    const length =
      lead < 0x80
        ? 1
        : lead >= 0xc2 && lead <= 0xdf
          ? 2
          : lead >= 0xe0 && lead <= 0xef
            ? 3
            : lead >= 0xf0 && lead <= 0xf4
              ? 4
              : 0;
    if (length === 0) return index;
    for (let next = 1; next < length; next++) {
      if (((bytes[index + next] ?? 0) & 0xc0) !== 0x80) return index;
    }
    index += length;
  }
  return -1;
}

/** Decodes UTF-8 strictly: a file in another encoding is refused, never read as garbage. */
function decodeUtf8(bytes: Uint8Array, file: string): string {
  try {
    return UTF8.decode(bytes).replace(/^\uFEFF/, "");
  } catch {
    const offset = firstInvalidByte(bytes);
    const at =
      offset === -1
        ? ""
        : ` (byte 0x${(bytes[offset] ?? 0).toString(16).padStart(2, "0")} at offset ${offset})`;
    const line =
      offset === -1 ? undefined : new TextDecoder().decode(bytes.subarray(0, offset)).split("\n").length;
    throw new GeneratorError({
      code: "input",
      file,
      ...(line === undefined ? {} : { line }),
      message: `is not UTF-8 text${at}; save it as UTF-8`,
    });
  }
}

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return decodeUtf8(await readFile(path), path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EISDIR") {
      throw new GeneratorError({ code: "input", file: path, message: "is a folder, not a file" });
    }
    if (
      (error as NodeJS.ErrnoException).code === "ENOENT" ||
      (error as NodeJS.ErrnoException).code === "ENOTDIR"
    ) {
      return undefined;
    }
    throw error;
  }
}

async function readSkill(
  folder: string,
  gstackName: string,
  prefix: string,
  options: ReadSourcesOptions,
): Promise<SkillSource | undefined> {
  if (options.resolvers) {
    const template = await readIfPresent(join(folder, "SKILL.md.tmpl"));
    if (template !== undefined) {
      const file = `${prefix}SKILL.md.tmpl`;
      return {
        gstackName,
        file,
        source: resolveTemplate(template, { file, skill: gstackName, resolvers: options.resolvers }),
      };
    }
  }
  const source = await readIfPresent(join(folder, "SKILL.md"));
  return source === undefined ? undefined : { gstackName, file: `${prefix}SKILL.md`, source };
}

/**
 * Reads every gstack skill in a folder laid out as gstack installs it (a root SKILL.md
 * and one folder per skill, as under `~/.claude/skills/gstack` or in a checkout). Hidden
 * folders and `node_modules` are skipped. Returns the skills sorted by file.
 */
export async function readSkillSources(
  input: string,
  options: ReadSourcesOptions = {},
): Promise<SkillSource[]> {
  let entries: import("node:fs").Dirent[];
  try {
    entries = await readdir(input, { withFileTypes: true });
  } catch (cause) {
    throw new GeneratorError({ code: "input", file: input, message: "cannot read the input folder", cause });
  }
  const sources: SkillSource[] = [];
  const root = await readSkill(input, "", "", options);
  if (root) sources.push(root);
  const folders = entries
    .filter(
      (entry) =>
        (entry.isDirectory() || entry.isSymbolicLink()) &&
        !entry.name.startsWith(".") &&
        entry.name !== "node_modules",
    )
    .map((entry) => entry.name)
    .sort();
  // A skill folder that is a link to another skill folder (an old name kept as an alias)
  // is the same skill: it is generated once, under its real name.
  const realFolders = new Map<string, string>();
  for (const name of folders) {
    const real = await realpath(join(input, name)).catch(() => undefined);
    if (real !== undefined && !entries.find((entry) => entry.name === name)?.isSymbolicLink()) {
      realFolders.set(real, name);
    }
  }
  for (const name of folders) {
    if (entries.find((entry) => entry.name === name)?.isSymbolicLink()) {
      const real = await realpath(join(input, name)).catch(() => undefined);
      if (real !== undefined && realFolders.has(real)) continue;
    }
    const skill = await readSkill(join(input, name), name, `${name}/`, options);
    if (skill) sources.push(skill);
  }
  if (sources.length === 0) {
    throw new GeneratorError({
      code: "input",
      file: input,
      message: "no SKILL.md found (expected <skill>/SKILL.md folders, as in ~/.claude/skills/gstack)",
    });
  }
  return sources;
}

/** Reads gstack's VERSION file from the input folder, when there is one. */
export async function readGstackVersion(input: string): Promise<string | undefined> {
  return (await readIfPresent(join(input, "VERSION")))?.trim();
}
