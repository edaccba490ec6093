import { randomBytes } from "node:crypto";
import { cp, lstat, mkdir, readdir, rename, rm } from "node:fs/promises";
import { isAbsolute, join, relative } from "node:path";
import { openClawLayout } from "@gstack/contracts";
import { BridgeSkillError } from "./bridge-skill-error";
import { BRIDGE_SKILL_NAME, bridgeSkillPath } from "./bridge-skill-path";

/** What {@link installBridgeSkill} did. */
export interface InstalledBridgeSkill {
  /** The installed skill folder, `skills/gstack-bridge` in the workspace. */
  path: string;
  /** Files of the installed skill, relative to its folder, sorted, with `/` separators. */
  files: string[];
  /** True when an earlier copy of the skill was replaced. */
  replaced: boolean;
}

/** Prefix of the staging and retired folders; they start with a dot so nothing takes them for a skill. */
const WORK_PREFIX = `.${BRIDGE_SKILL_NAME}.`;

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

async function listFiles(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(folder, join(entry.parentPath, entry.name)).split("\\").join("/"))
    .sort();
}

function randomSuffix(): string {
  return `${process.pid}-${randomBytes(6).toString("hex")}`;
}

/**
 * Installs the gstack-bridge skill into an OpenClaw workspace as `skills/gstack-bridge`.
 * The new copy is assembled in a hidden folder beside it and renamed into place, and an
 * earlier copy is renamed away before it is deleted, so OpenClaw never reads a half-copied
 * skill and a failed install leaves the earlier copy in place. Leftovers of an interrupted
 * install are removed. `source` overrides the skill folder to install (default: the one
 * this package ships).
 */
export async function installBridgeSkill(
  workspace: string,
  options: { source?: string } = {},
): Promise<InstalledBridgeSkill> {
  if (!isAbsolute(workspace)) {
    throw new BridgeSkillError(
      "invalid-workspace",
      workspace,
      `the OpenClaw workspace must be an absolute path, not ${JSON.stringify(workspace)} (resolveOpenClawWorkspace() from @gstack/contracts gives the user's)`,
    );
  }
  const source = options.source ?? bridgeSkillPath;
  if (!(await exists(join(source, "SKILL.md")))) {
    throw new BridgeSkillError(
      "missing-skill",
      source,
      `${source} holds no SKILL.md; the package is incomplete`,
    );
  }
  const layout = openClawLayout(workspace);
  const target = layout.skill(BRIDGE_SKILL_NAME);
  await mkdir(layout.skills, { recursive: true });

  for (const entry of await readdir(layout.skills)) {
    if (entry.startsWith(WORK_PREFIX)) await rm(join(layout.skills, entry), { recursive: true, force: true });
  }

  const staging = join(layout.skills, `${WORK_PREFIX}staging-${randomSuffix()}`);
  const retired = join(layout.skills, `${WORK_PREFIX}retired-${randomSuffix()}`);
  try {
    await cp(source, staging, { recursive: true, errorOnExist: true, force: false });
  } catch (cause) {
    await rm(staging, { recursive: true, force: true });
    throw new BridgeSkillError(
      "install-failed",
      staging,
      `could not copy the skill to ${staging}: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }

  const replaced = await exists(target);
  if (replaced) await rename(target, retired);
  try {
    await rename(staging, target);
  } catch (cause) {
    if (replaced) await rename(retired, target);
    await rm(staging, { recursive: true, force: true });
    throw new BridgeSkillError(
      "install-failed",
      target,
      `could not put the skill in place at ${target}: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  if (replaced) await rm(retired, { recursive: true, force: true });
  return { path: target, files: await listFiles(target), replaced };
}
