import { GSTACK_HELPERS } from "./find-claude-references";
import { openClawSkillName } from "./skill-names";

/** What the rewriting rules need to know about the run. */
export interface RewriteContext {
  /** gstack skill names in this run, to recognise references such as `/review`. */
  skillNames: ReadonlySet<string>;
  /** The OpenClaw skills folder as written into the output, e.g. `~/.openclaw/workspace/skills`. */
  skillsRoot: string;
}

/** The default OpenClaw skills folder, written with `~` so the text fits every user. */
export const DEFAULT_SKILLS_ROOT = "~/.openclaw/workspace/skills";

function outputSkillName(gstackName: string): string {
  try {
    return openClawSkillName(gstackName);
  } catch {
    return `gstack-${gstackName}`;
  }
}

/** Replaces `~` in the skills root by the home prefix the source used (`~`, `$HOME`). */
function rootWithPrefix(context: RewriteContext, prefix: string): string {
  return context.skillsRoot.startsWith("~/") ? prefix + context.skillsRoot.slice(1) : context.skillsRoot;
}

/** A gstack helper named without its path, which only works where gstack put bin/ on the PATH. */
const BARE_HELPER = new RegExp(`(?<![\\w/.$-])(gstack-(?:${GSTACK_HELPERS.join("|")}))(?![\\w-])`, "g");

/**
 * Rewrites Claude Code paths and file names, in any kind of text: a gstack skill's
 * SKILL.md under `~/.claude/skills/gstack/<skill>/` becomes the OpenClaw skill's, the rest
 * of the gstack install moves beside the root `gstack` skill, other `~/.claude/skills`
 * become OpenClaw workspace skills, gstack's helpers named without a path get the path of
 * the pack's `bin/`, and CLAUDE.md becomes AGENTS.md.
 */
export function rewritePaths(text: string, context: RewriteContext): string {
  // Each rule runs only when the text holds what it must match: most text holds none.
  let output = text;
  if (output.includes(".claude/skills")) {
    output = output
      .replace(
        /(~|\$HOME|\$\{HOME\})\/\.claude\/skills\/gstack\/([a-z0-9][a-z0-9-]*)\/SKILL\.md\b/g,
        (_match, prefix: string, skill: string) =>
          `${rootWithPrefix(context, prefix)}/${outputSkillName(skill)}/SKILL.md`,
      )
      .replace(
        /(~|\$HOME|\$\{HOME\})\/\.claude\/skills\/gstack(?![A-Za-z0-9_-])/g,
        (_match, prefix: string) => `${rootWithPrefix(context, prefix)}/gstack`,
      )
      .replace(/(~|\$HOME|\$\{HOME\})\/\.claude\/skills(?![A-Za-z0-9_-])/g, (_match, prefix: string) =>
        rootWithPrefix(context, prefix),
      )
      .replace(/(^|[\s"'`(=/])\.claude\/skills\/gstack(?![A-Za-z0-9_-])/gm, "$1skills/gstack");
  }
  if (output.includes("gstack-")) {
    output = output.replace(
      BARE_HELPER,
      (_match, helper: string) => `${context.skillsRoot}/gstack/bin/${helper}`,
    );
  }
  return output.includes("CLAUDE.md") ? output.replace(/\bCLAUDE\.md\b/g, "AGENTS.md") : output;
}
