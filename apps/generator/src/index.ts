export {
  AGENTS_SECTION_BEGIN,
  AGENTS_SECTION_END,
  agentsSection,
  mergeAgentsSection,
} from "./agents-section";
export type { VersionMismatch } from "./check-openclaw-version";
export { compareDottedVersions, findVersionMismatches } from "./check-openclaw-version";
export type { PublishPlan, PublishStep } from "./clawhub";
export { CLAWHUB_SLUG, formatPublishPlan, isClawHubSlug, publishPlan } from "./clawhub";
export type { ClaudeReference } from "./find-claude-references";
export { findClaudeReferences } from "./find-claude-references";
export { formatReport } from "./format-report";
export type { GenerateOptions } from "./generate";
export { buildFromFolder, checkFolder, generateToFolder } from "./generate";
export type { Bundle, BundleOptions, RunReport, SkillReport } from "./generate-bundle";
export { DEFAULT_EXCLUDED, generateBundle } from "./generate-bundle";
export type { GeneratorErrorCode } from "./generator-error";
export { GeneratorError } from "./generator-error";
export type { SkillBins } from "./infer-bins";
export { inferBins, inferRequiredBins, notableBins } from "./infer-bins";
export type { InstallOptions, InstallResult } from "./install-workspace";
export { installToWorkspace, pointSkillsAt } from "./install-workspace";
export type { OutputDifference } from "./output-files";
export { compareOutput, isUpToDate, writeOutput } from "./output-files";
export type { ReadSourcesOptions } from "./read-skill-sources";
export { readGstackVersion, readSkillSources } from "./read-skill-sources";
export type { Resolver, ResolverContext, ResolverSet } from "./resolve-template";
export { MAX_TEMPLATE_PASSES, resolveTemplate } from "./resolve-template";
export type { RewriteContext } from "./rewrite-paths";
export { DEFAULT_SKILLS_ROOT, rewritePaths } from "./rewrite-paths";
export { DESCRIPTION_LIMIT, DESCRIPTION_TARGET, oneLineDescription } from "./skill-description";
export { isHyphenCase, openClawSkillName, PACK_NAME, slashCommandOf } from "./skill-names";
export { soulMarkdown } from "./soul";
export type { StrippedPart } from "./strip-claude-preamble";
export { stripClaudePreamble } from "./strip-claude-preamble";
export type { SupportFile, SupportFiles } from "./support-files";
export { readSupportFiles, referencedSupportPaths } from "./support-files";
export type { ToolMapping } from "./tool-mapping";
export { claudeToolNames, toolMappings } from "./tool-mapping";
export type { SkillSource, TransformedSkill, TransformOptions } from "./transform-skill";
export { transformSkill } from "./transform-skill";
export type { SkillIssue } from "./validate-openclaw-skill";
export { MAX_SKILL_BYTES, STRICT_TOP_LEVEL_KEYS, validateOpenClawSkill } from "./validate-openclaw-skill";
export type { GstackVersion } from "./version-mapping";
export { compareSemver, fromSemver, MICRO_LIMIT, parseGstackVersion, toSemver } from "./version-mapping";
export type { SkillWatcher, WatchResult } from "./watch-skills";
export { watchSkills } from "./watch-skills";
