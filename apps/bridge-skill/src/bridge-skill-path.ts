import { fileURLToPath } from "node:url";

/** The skill's name: its folder name and the `name` in its SKILL.md. */
export const BRIDGE_SKILL_NAME = "gstack-bridge";

/**
 * Absolute path of the shipped skill folder (`skill/gstack-bridge` in this package), holding
 * `SKILL.md` and `references/`. The same from the built package and from source.
 */
export const bridgeSkillPath: string = fileURLToPath(
  new URL(`../skill/${BRIDGE_SKILL_NAME}`, import.meta.url),
);
