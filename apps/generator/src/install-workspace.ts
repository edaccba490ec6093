import { readFile } from "node:fs/promises";
import { relative } from "node:path";
import { openClawLayout, writeFileAtomic } from "@gstack/contracts";
import { mergeAgentsSection } from "./agents-section";
import type { Bundle } from "./generate-bundle";
import { writeOutput } from "./output-files";

/** What installing into an OpenClaw workspace changed. */
export interface InstallResult {
  /** Paths relative to the workspace. */
  written: string[];
  removed: string[];
  /** True when the workspace already had a SOUL.md of its own, which is never replaced. */
  keptOwnSoul: boolean;
}

async function readOrEmpty(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Installs a generated bundle into an OpenClaw workspace: the skills into `skills/`
 * (skill folders this generator installed earlier and no longer produces are removed), the
 * gstack section merged into AGENTS.md between its markers, and SOUL.md only when the
 * workspace has none, since a user's SOUL.md is their agent's identity.
 */
export async function installToWorkspace(bundle: Bundle, workspace: string): Promise<InstallResult> {
  const layout = openClawLayout(workspace);
  const skills = new Map([...bundle.files].filter(([path]) => path.startsWith("skills/")));
  const { written, removed } = await writeOutput(workspace, skills);

  const section = bundle.files.get("AGENTS.md") ?? "";
  const agents = (await readOrEmpty(layout.agents)) ?? "";
  const merged = mergeAgentsSection(agents, section);
  if (merged !== agents) {
    await writeFileAtomic(layout.agents, merged);
    written.push(relative(workspace, layout.agents));
  }

  const soul = bundle.files.get("SOUL.md") ?? "";
  const existingSoul = await readOrEmpty(layout.soul);
  if (existingSoul === undefined) {
    await writeFileAtomic(layout.soul, soul);
    written.push(relative(workspace, layout.soul));
  }
  return {
    written: written.sort(),
    removed,
    keptOwnSoul: existingSoul !== undefined && existingSoul !== soul,
  };
}
