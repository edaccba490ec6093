import { readFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join, relative, resolve } from "node:path";
import { openClawLayout, writeFileAtomic } from "@gstack/contracts";
import { mergeAgentsSection } from "./agents-section";
import type { Bundle } from "./generate-bundle";
import { writeOutput } from "./output-files";
import { DEFAULT_SKILLS_ROOT } from "./rewrite-paths";

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

/** Where the installed skills are, for the paths written into them. */
export interface InstallOptions {
  /** The user's home folder; default `os.homedir()`. */
  home?: string;
}

// biome-ignore lint/suspicious/noTemplateCurlyInString: the shell spelling ${HOME}, not a template
const DEFAULT_ROOT_FORMS = ["~", "$HOME", "${HOME}"].map(
  (prefix) => `${prefix}${DEFAULT_SKILLS_ROOT.slice(1)}`,
);

/**
 * The skills with every path into the default skills folder (`~/.openclaw/workspace/skills`,
 * also spelled with `$HOME`) pointed at the workspace actually installed into, so that a
 * profile's or `OPENCLAW_WORKSPACE_DIR`'s skills read their own support files. Unchanged
 * for the default workspace.
 */
export function pointSkillsAt(
  files: ReadonlyMap<string, string>,
  workspace: string,
  home: string = homedir(),
): Map<string, string> {
  const skillsFolder = join(resolve(workspace), "skills");
  if (skillsFolder === join(resolve(home), ".openclaw", "workspace", "skills")) return new Map(files);
  const pointed = new Map<string, string>();
  for (const [path, content] of files) {
    let text = content;
    if (path.endsWith(".md")) {
      for (const form of DEFAULT_ROOT_FORMS) text = text.split(form).join(skillsFolder);
    }
    pointed.set(path, text);
  }
  return pointed;
}

/**
 * Installs a generated bundle into an OpenClaw workspace: the skills into `skills/` with
 * their paths pointed at this workspace, the support files beside the pack skill (skill folders this generator installed earlier and no longer produces are removed), the
 * gstack section merged into AGENTS.md between its markers, and SOUL.md only when the
 * workspace has none, since a user's SOUL.md is their agent's identity.
 */
export async function installToWorkspace(
  bundle: Bundle,
  workspace: string,
  options: InstallOptions = {},
): Promise<InstallResult> {
  const layout = openClawLayout(workspace);
  const skills = pointSkillsAt(
    new Map([...bundle.files].filter(([path]) => path.startsWith("skills/"))),
    workspace,
    options.home,
  );
  const supportText = new Map(
    [...bundle.supportFiles]
      .filter(([path]) => path.endsWith(".md"))
      .map(([path, file]) => [path, new TextDecoder().decode(file.content)] as const),
  );
  const pointedSupport = pointSkillsAt(supportText, workspace, options.home);
  const support = new Map(
    [...bundle.supportFiles].map(([path, file]) => {
      const text = pointedSupport.get(path);
      return [
        path,
        text === undefined ? file : { ...file, content: new TextEncoder().encode(text) },
      ] as const;
    }),
  );
  const { written, removed } = await writeOutput(workspace, skills, support);

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
