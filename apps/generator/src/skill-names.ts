import { GeneratorError } from "./generator-error";

/** The pack's name: the root skill's folder, and the prefix of every other skill. */
export const PACK_NAME = "gstack";

const HYPHEN_CASE = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/** True when `name` is lower-case letters and digits in hyphen-separated words. */
export function isHyphenCase(name: string): boolean {
  return HYPHEN_CASE.test(name);
}

/**
 * The OpenClaw skill name (and folder) of a gstack skill: `gstack-<name>`, or `gstack` for
 * the root skill. gstack names are already hyphen-case; anything else is refused rather
 * than silently renamed, so two skills can never collide.
 */
export function openClawSkillName(gstackName: string, file?: string): string {
  if (gstackName === "" || gstackName === PACK_NAME) return PACK_NAME;
  const name = `${PACK_NAME}-${gstackName}`;
  if (!isHyphenCase(gstackName) || name.length > 64) {
    throw new GeneratorError({
      code: "skill-name",
      ...(file ? { file } : {}),
      message: `skill name ${JSON.stringify(gstackName)} cannot become an OpenClaw name: it must be hyphen-case (a-z, 0-9, single hyphens) and "${PACK_NAME}-<name>" at most 64 characters`,
    });
  }
  return name;
}

/** The slash command OpenClaw derives from a skill name: lower case, `[a-z0-9_]`, ≤ 32. */
export function slashCommandOf(skillName: string): string {
  return skillName
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, "_")
    .slice(0, 32);
}
