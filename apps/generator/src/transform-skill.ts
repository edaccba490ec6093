import { dropHookSentences } from "./drop-hook-sentences";
import { type ClaudeReference, findClaudeReferences } from "./find-claude-references";
import { GeneratorError } from "./generator-error";
import { inferBins } from "./infer-bins";
import { parseMarkdownStructure } from "./markdown-structure";
import { insertOpenClawNotes, normaliseBlankLines, type OpenClawNote } from "./openclaw-notes";
import { rewriteCodeBlock } from "./rewrite-code";
import { type RewriteContext, rewritePaths } from "./rewrite-paths";
import { rewriteProse, SKILL_CLOSE, SKILL_OPEN, TOOL_CLOSE, TOOL_OPEN } from "./rewrite-prose";
import { oneLineDescription } from "./skill-description";
import { parseSkillDocument } from "./skill-document";
import { emojiFor } from "./skill-emoji";
import { openClawSkillName } from "./skill-names";
import { type StrippedPart, stripClaudePreamble } from "./strip-claude-preamble";
import { claudeToolNames } from "./tool-mapping";
import { describeUnenforcedHooks, UNENFORCED_HOOKS_NOTE } from "./unenforced-hooks";

/** One gstack skill as read from disk. */
export interface SkillSource {
  /** gstack's name for the skill: its folder, or `""` for the root skill. */
  gstackName: string;
  /** Path relative to the input folder, e.g. `ship/SKILL.md`; used in messages and output. */
  file: string;
  /** The SKILL.md text (already expanded when it came from a template). */
  source: string;
}

/** Settings that shape every generated skill. */
export interface TransformOptions extends RewriteContext {
  /** Written to `metadata.openclaw.homepage`. */
  homepage: string;
  /** Written to the `license` field. */
  license: string;
}

/** A skill ready for OpenClaw, with what the run report needs to know about it. */
export interface TransformedSkill {
  /** OpenClaw name and folder, e.g. `gstack-ship`. */
  name: string;
  gstackName: string;
  file: string;
  /** The complete SKILL.md. */
  content: string;
  /** Binaries declared in `requires.bins`: what the skill cannot run without. */
  bins: string[];
  /** Binaries the skill may use but works without; listed under `metadata.gstack.optionalBins`. */
  optionalBins: string[];
  /** Claude-only references that remain, each with its reason. The goal is none. */
  leftovers: ClaudeReference[];
  /** Claude-only preamble parts that were removed. */
  stripped: StrippedPart[];
  /** Notes added to explain OpenClaw behaviour. */
  notes: OpenClawNote["id"][];
  /** Frontmatter fields with no place in OpenClaw output. */
  droppedFields: string[];
}

/** The `file` of the pack entry point the generator writes when gstack has no root skill. */
export const GENERATED_PACK_FILE = "(pack entry point)";

/** gstack frontmatter kept under `metadata.gstack`; OpenClaw's strict validator refuses them on top. */
const KEPT_FIELDS = [
  "version",
  "triggers",
  "voice-triggers",
  "min_openclaw_version",
  "benefits-from",
  "sensitive",
  "interactive",
];
const CONSUMED_FIELDS = new Set(["name", "description"]);

/** gstack's own generator comments ("AUTO-GENERATED…", "Regenerate: …") at the top of the body. */
const GENERATED_HEADER = /^(?:\s*<!--\s*(?:AUTO-GENERATED|Regenerate)[^\n]*-->[ \t]*\n?)+/;

function rewriteBody(
  body: string,
  context: RewriteContext,
  flags: { spawnsSessions: boolean; plansOnly: boolean },
) {
  const { spans } = parseMarkdownStructure(body);
  let output = "";
  let prose = "";
  let cursor = 0;
  const flush = () => {
    output += rewriteProse(prose, context, flags);
    prose = "";
  };
  for (const span of spans) {
    if (span.start < cursor) continue;
    prose += body.slice(cursor, span.start);
    const raw = body.slice(span.start, span.end);
    cursor = span.end;
    if (span.kind === "inline-code") {
      const skill = /^\/([a-z0-9][a-z0-9-]*)$/.exec(span.value)?.[1];
      if (claudeToolNames.includes(span.value)) {
        prose += `${TOOL_OPEN}${span.value}${TOOL_CLOSE}`;
      } else if (skill && context.skillNames.has(skill)) {
        prose += `${SKILL_OPEN}${skill}${SKILL_CLOSE}`;
      } else {
        flush();
        output += rewritePaths(raw, context);
      }
      continue;
    }
    flush();
    output += span.kind === "fence" ? rewriteCodeBlock(raw, span.value, context) : rewritePaths(raw, context);
  }
  prose += body.slice(cursor);
  flush();
  return output;
}

function metadataOf(
  source: SkillSource,
  frontmatter: Record<string, unknown>,
  bins: { required: string[]; optional: string[] },
  options: TransformOptions,
): Record<string, unknown> {
  const gstack: Record<string, unknown> = { source: source.file };
  for (const field of KEPT_FIELDS) {
    const value = frontmatter[field];
    if (value === undefined || value === null) continue;
    if (field === "benefits-from") {
      const names = (Array.isArray(value) ? value : [value]).map(String);
      gstack[field] = names.map((name) => (options.skillNames.has(name) ? openClawSkillName(name) : name));
    } else {
      gstack[field] = typeof value === "number" && field.includes("version") ? String(value) : value;
    }
  }
  const openclaw: Record<string, unknown> = {
    emoji: emojiFor(source.gstackName),
    homepage: options.homepage,
  };
  if (bins.required.length > 0) openclaw["requires"] = { bins: bins.required };
  if (bins.optional.length > 0) gstack["optionalBins"] = bins.optional;
  return { openclaw, gstack };
}

/**
 * Rewrites Markdown instructions a skill reads at run time (gstack's `sections/*.md`) by the
 * same rules as a skill's body: hook talk removed, tools and Claude-only instructions
 * rewritten by kind of text, notes where OpenClaw behaves differently. Returns the text and
 * the Claude-only references left in it.
 */
export function rewriteInstructions(
  markdown: string,
  options: RewriteContext,
): { text: string; leftovers: ClaudeReference[] } {
  const flags = { spawnsSessions: false, plansOnly: false };
  const rewritten = rewriteBody(dropHookSentences(markdown.replace(/^\uFEFF/, "")), options, flags);
  const text = normaliseBlankLines(insertOpenClawNotes(rewritten).body);
  return { text, leftovers: findClaudeReferences(text) };
}

/**
 * Turns one gstack SKILL.md into an OpenClaw SKILL.md: frontmatter the OpenClaw loader
 * reads and its strict validator accepts, Claude-only preamble parts removed, tools and
 * Claude-only instructions rewritten by kind of text, and notes where OpenClaw behaves
 * differently. Pure: same input, same bytes.
 */
export function transformSkill(source: SkillSource, options: TransformOptions): TransformedSkill {
  const document = parseSkillDocument(source.source, source.file);
  if (!document.hasFrontmatter) {
    throw new GeneratorError({
      code: "frontmatter",
      file: source.file,
      line: 1,
      message:
        "has no frontmatter: a SKILL.md must open with a --- line, then name and description, then ---",
    });
  }
  const gstackName =
    source.gstackName === ""
      ? ""
      : String(document.frontmatter["name"] ?? source.gstackName) || source.gstackName;
  const name = openClawSkillName(gstackName === "gstack" ? "" : gstackName, source.file);
  const flags = { spawnsSessions: false, plansOnly: false };

  const { body: withoutPreamble, stripped } = stripClaudePreamble(
    document.body.replace(GENERATED_HEADER, ""),
  );
  const hooked = Boolean(document.frontmatter["hooks"]);
  const rewrittenText = rewriteBody(
    dropHookSentences(hooked ? describeUnenforcedHooks(withoutPreamble) : withoutPreamble),
    options,
    flags,
  );
  const rewritten = hooked ? `${UNENFORCED_HOOKS_NOTE}\n\n${rewrittenText}` : rewrittenText;
  const { body: withNotes, added } = insertOpenClawNotes(rewritten);
  const body = normaliseBlankLines(withNotes);

  const description = oneLineDescription(document.frontmatter["description"], source.file, (text) =>
    rewriteProse(text, options, { spawnsSessions: false, plansOnly: false }),
  );
  const structure = parseMarkdownStructure(body);
  const bins = inferBins(body, structure);
  const metadata = metadataOf(source, document.frontmatter, bins, options);
  const frontmatter = [
    "---",
    `name: ${name}`,
    `description: ${JSON.stringify(description)}`,
    `license: ${options.license}`,
    `metadata: ${JSON.stringify(metadata)}`,
    "---",
  ].join("\n");
  const header =
    source.file === GENERATED_PACK_FILE
      ? "<!-- Generated by gstack-openclaw-gen as the gstack pack's entry point. Do not edit: regenerate. -->"
      : `<!-- Generated by gstack-openclaw-gen from gstack's ${source.file}. Do not edit: change the gstack skill and regenerate. -->`;
  const content = `${frontmatter}\n${header}\n\n${body}`;
  const bodyLine = frontmatter.split("\n").length + 3;
  const droppedFields = Object.keys(document.frontmatter)
    .filter((field) => !KEPT_FIELDS.includes(field) && !CONSUMED_FIELDS.has(field))
    .sort();
  return {
    name,
    gstackName,
    file: source.file,
    content,
    bins: bins.required,
    optionalBins: bins.optional,
    leftovers: findClaudeReferences(body, structure).map((reference) => ({
      ...reference,
      line: reference.line + bodyLine - 1,
    })),
    stripped,
    notes: added,
    droppedFields,
  };
}
