import { agentsSection } from "./agents-section";
import { type PublishPlan, publishPlan } from "./clawhub";
import { compareText } from "./compare-text";
import type { ClaudeReference } from "./find-claude-references";
import { normaliseBlankLines } from "./openclaw-notes";
import { packIntroduction, packSection } from "./pack-skill";
import { DEFAULT_SKILLS_ROOT } from "./rewrite-paths";
import { PACK_NAME } from "./skill-names";
import { soulMarkdown } from "./soul";
import type { StrippedPart } from "./strip-claude-preamble";
import type { SupportFile, SupportFiles } from "./support-files";
import {
  GENERATED_PACK_FILE,
  rewriteInstructions,
  type SkillSource,
  type TransformedSkill,
  transformSkill,
} from "./transform-skill";
import { MAX_SKILL_BYTES, type SkillIssue, validateOpenClawSkill } from "./validate-openclaw-skill";
import { toSemver } from "./version-mapping";

/** Settings of one generation run. */
export interface BundleOptions {
  /** OpenClaw skills folder as written into the output. Default `~/.openclaw/workspace/skills`. */
  skillsRoot?: string;
  /** Written to `metadata.openclaw.homepage`. Default gstack's repository. */
  homepage?: string;
  /** Written to each skill's `license`. Default `MIT`, gstack's license. */
  license?: string;
  /** gstack's four-part VERSION; when given, the ClawHub publish plan is produced. */
  gstackVersion?: string;
  /** gstack skill names to leave out, with the reason shown in the report. */
  exclude?: Readonly<Record<string, string>>;
  /** Files the skills read at run time, from the user's gstack; installed beside the pack skill. */
  support?: SupportFiles;
}

/** gstack skills that make no sense on OpenClaw, and why. */
export const DEFAULT_EXCLUDED: Readonly<Record<string, string>> = {
  "gstack-upgrade": "upgrades gstack's Claude Code install; on OpenClaw, `clawhub update` updates the pack",
};

/** What happened to one skill, for the run report. */
export interface SkillReport {
  name: string;
  source: string;
  bins: string[];
  /** Binaries the skill may use but works without (not a gate). */
  optionalBins: string[];
  leftovers: ClaudeReference[];
  stripped: StrippedPart[];
  notes: string[];
  droppedFields: string[];
  /** Loader and strict-validator issues of the generated file; none expected. */
  issues: SkillIssue[];
}

/** The report of a run. */
export interface RunReport {
  skills: SkillReport[];
  skipped: { source: string; reason: string }[];
  /** Claude-only references left in all skills together. The goal is zero. */
  leftoverCount: number;
  /** The same, by construct and where it sits, e.g. `{"MCP tool": {"inline-code": 47}}`. */
  leftoversByConstruct: Record<string, Partial<Record<ClaudeReference["context"], number>>>;
  /** Validator errors in all skills together. Must be zero. */
  errorCount: number;
  /** Claude-only references left in the Markdown support files, by output path. */
  supportLeftovers: { path: string; leftovers: ClaudeReference[] }[];
  /**
   * Paths the skills read under the pack's folder that the input gstack lacks (relative to
   * the gstack folder). A full gstack install has them all; a skills-only copy does not.
   */
  missingSupport: string[];
}

/** Generated files by path relative to the output folder, plus the report. */
export interface Bundle {
  files: Map<string, string>;
  /** Support files by path relative to the output folder (`skills/gstack/bin/gstack-slug`). */
  supportFiles: Map<string, SupportFile>;
  report: RunReport;
  plan: PublishPlan | undefined;
}

const DEFAULT_HOMEPAGE = "https://github.com/garrytan/gstack";

function reportOf(skill: TransformedSkill): SkillReport {
  return {
    name: skill.name,
    source: skill.file,
    bins: skill.bins,
    optionalBins: skill.optionalBins,
    leftovers: skill.leftovers,
    stripped: skill.stripped,
    notes: skill.notes,
    droppedFields: skill.droppedFields,
    issues: validateOpenClawSkill({ folderName: skill.name, content: skill.content }),
  };
}

function countByConstruct(reports: readonly SkillReport[]): RunReport["leftoversByConstruct"] {
  const counts: RunReport["leftoversByConstruct"] = {};
  const all = reports.flatMap((skill) => skill.leftovers);
  for (const construct of [...new Set(all.map((leftover) => leftover.construct))].sort(compareText)) {
    const byContext: Partial<Record<ClaudeReference["context"], number>> = {};
    for (const leftover of all.filter((candidate) => candidate.construct === construct)) {
      byContext[leftover.context] = (byContext[leftover.context] ?? 0) + 1;
    }
    counts[construct] = byContext;
  }
  return counts;
}

function descriptionOf(content: string): string {
  const line = /^description: (.*)$/m.exec(content)?.[1] ?? '""';
  return JSON.parse(line) as string;
}

function withPack(skill: TransformedSkill, members: TransformedSkill[]): TransformedSkill {
  const section = packSection(
    members.map((member) => ({ name: member.name, description: descriptionOf(member.content) })),
  );
  return { ...skill, content: normaliseBlankLines(`${skill.content}\n${section}`) };
}

function generatedPackSkill(
  options: Required<Omit<BundleOptions, "gstackVersion" | "exclude" | "support">>,
  context: { skillNames: Set<string> },
): TransformedSkill {
  const source = `---\nname: gstack\ndescription: The gstack skill pack for OpenClaw. Routes coding work to the right gstack workflow and installs the rest of the pack.\n---\n${packIntroduction()}`;
  return transformSkill(
    { gstackName: "", file: GENERATED_PACK_FILE, source },
    { ...options, skillNames: context.skillNames },
  );
}

/**
 * Generates the whole OpenClaw output from gstack skill sources, in memory: one SKILL.md
 * per skill, the meta-package (`skills/gstack`, with SOUL.md), SOUL.md, the AGENTS.md
 * section and, when the gstack version is known, `clawhub.json` with the publish plan.
 * Pure and deterministic: sources in any order give the same bytes.
 */
export function generateBundle(sources: readonly SkillSource[], options: BundleOptions = {}): Bundle {
  const settings = {
    skillsRoot: options.skillsRoot ?? DEFAULT_SKILLS_ROOT,
    homepage: options.homepage ?? DEFAULT_HOMEPAGE,
    license: options.license ?? "MIT",
  };
  const exclude = options.exclude ?? DEFAULT_EXCLUDED;
  const sorted = [...sources].sort((left, right) => compareText(left.file, right.file));
  const skipped: RunReport["skipped"] = [];
  const included = sorted.filter((source) => {
    const reason = exclude[source.gstackName];
    if (reason !== undefined) skipped.push({ source: source.file, reason });
    return reason === undefined;
  });
  const skillNames = new Set(included.map((source) => source.gstackName).filter((name) => name !== ""));
  const context = { ...settings, skillNames };
  const transformed = included
    .map((source) => transformSkill(source, context))
    .filter((skill) => {
      const bytes = Buffer.byteLength(skill.content, "utf8");
      if (bytes <= MAX_SKILL_BYTES) return true;
      skipped.push({
        source: skill.file,
        reason: `${bytes} bytes once generated; OpenClaw skips a SKILL.md over ${MAX_SKILL_BYTES} bytes, so it is not written`,
      });
      return false;
    });
  const members = transformed.filter((skill) => skill.name !== PACK_NAME);
  const root =
    transformed.find((skill) => skill.name === PACK_NAME) ?? generatedPackSkill(settings, { skillNames });
  const pack = withPack(root, members);
  const skills = [...members, pack].sort((left, right) => compareText(left.name, right.name));

  const files = new Map<string, string>();
  const soul = soulMarkdown();
  for (const skill of skills) files.set(`skills/${skill.name}/SKILL.md`, skill.content);
  files.set(`skills/${PACK_NAME}/SOUL.md`, soul);
  files.set("SOUL.md", soul);
  files.set("AGENTS.md", agentsSection({ skills: members.map((skill) => skill.name) }));

  let plan: PublishPlan | undefined;
  if (options.gstackVersion !== undefined) {
    plan = publishPlan({
      skills: skills.map((skill) => skill.name),
      metaPackage: PACK_NAME,
      gstackVersion: options.gstackVersion.trim(),
      version: toSemver(options.gstackVersion),
    });
    files.set("clawhub.json", `${JSON.stringify(plan, null, 2)}\n`);
  }

  const supportFiles = new Map<string, SupportFile>();
  const supportLeftovers: RunReport["supportLeftovers"] = [];
  for (const [path, file] of options.support?.files ?? []) {
    const target = `skills/${PACK_NAME}/${path}`;
    if (files.has(target)) continue;
    if (!path.endsWith(".md")) {
      supportFiles.set(target, file);
      continue;
    }
    // Instructions a skill reads are rewritten like the skill itself.
    const { text, leftovers } = rewriteInstructions(new TextDecoder().decode(file.content), context);
    supportFiles.set(target, { content: new TextEncoder().encode(text), mode: file.mode });
    if (leftovers.length > 0) supportLeftovers.push({ path: target, leftovers });
  }

  const reports = skills.map(reportOf);
  const report: RunReport = {
    skills: reports,
    skipped,
    leftoverCount: reports.reduce((sum, skill) => sum + skill.leftovers.length, 0),
    leftoversByConstruct: countByConstruct(reports),
    errorCount: reports.reduce(
      (sum, skill) => sum + skill.issues.filter((issue) => issue.severity === "error").length,
      0,
    ),
    supportLeftovers,
    missingSupport: [...(options.support?.missing ?? [])],
  };
  return {
    files: new Map([...files].sort(([left], [right]) => compareText(left, right))),
    supportFiles,
    report,
    plan,
  };
}
