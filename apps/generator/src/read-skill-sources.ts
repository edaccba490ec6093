import { readdir, readFile } from "node:fs/promises";
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

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
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
  for (const name of folders) {
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
