import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import type { SkillSource } from "../transform-skill";

/** The fixture gstack folder: a root skill and one folder per skill, in gstack's format. */
export const fixtureSkillsDir = join(import.meta.dirname, "skills");
/** Templates in gstack's `SKILL.md.tmpl` format. */
export const fixtureTemplatesDir = join(import.meta.dirname, "templates");

/** Reads the fixture skills as the generator's sources. */
export function fixtureSources(dir = fixtureSkillsDir): SkillSource[] {
  const sources: SkillSource[] = [{ gstackName: "", file: "SKILL.md", source: readFileSync(join(dir, "SKILL.md"), "utf8") }];
  for (const name of readdirSync(dir).sort()) {
    if (!statSync(join(dir, name)).isDirectory()) continue;
    sources.push({ gstackName: name, file: `${name}/SKILL.md`, source: readFileSync(join(dir, name, "SKILL.md"), "utf8") });
  }
  return sources;
}

/** One fixture skill's source. */
export function fixtureSource(name: string): SkillSource {
  const source = fixtureSources().find((candidate) => candidate.gstackName === name);
  if (!source) throw new Error(`no fixture skill ${name}`);
  return source;
}
