import { type Handoff, type HandoffInput, loadYaml, parseValue, RESUME_PROMPT_MAX } from "@gstack/contracts";
import { HandoffError } from "./handoff-error";
import { type HandoffSectionField, handoffSections } from "./handoff-sections";

const VERBATIM_INFO = "verbatim";
const FENCE_OPEN = /^(`{3,})verbatim$/;
const HEADING_TWO = /^ {0,3}##(?:[ \t]+(.*?))?[ \t]*$/;
const sectionFields = new Set<string>(handoffSections.map((section) => section.field));

/**
 * True when a section's text can be written as plain Markdown and read back unchanged:
 * not empty, no surrounding white space, no carriage return, no level-1/2 heading line and
 * no opening fence on its first line. Everything else is written verbatim in a fence.
 */
function isPlainSafe(text: string): boolean {
  if (text.length === 0 || text !== text.trim() || text.includes("\r")) return false;
  if (/^(```|~~~)/.test(text)) return false;
  return !text.split("\n").some((line) => /^ {0,3}#{1,2}([ \t]|$)/.test(line));
}

function longestBacktickRun(text: string): number {
  let longest = 0;
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length);
  return longest;
}

/** A section body: plain when that reads back exactly, else fenced with a fence longer than any backtick run. */
function encodeSection(text: string): string {
  if (isPlainSafe(text)) return text;
  const fence = "`".repeat(Math.max(3, longestBacktickRun(text) + 1));
  return `${fence}${VERBATIM_INFO}\n${text}\n${fence}`;
}

/** Throws the clear error the 4096-character limit deserves, before anything is written. */
export function assertResumePromptFits(prompt: string | undefined): void {
  if (prompt !== undefined && prompt.length > RESUME_PROMPT_MAX) {
    throw new HandoffError(
      "resume-prompt-too-long",
      `the resume prompt has ${prompt.length} characters; the limit is ${RESUME_PROMPT_MAX}. Shorten it (it is never cut) and put details in the Context or State sections`,
    );
  }
}

/**
 * Renders a handoff as Markdown: YAML frontmatter with every field except the sections,
 * then `## Context`, `## State`, `## What I need`, `## Resume prompt` (absent sections are
 * left out). Text that plain Markdown could not carry unchanged (surrounding white space,
 * `## ` lines, a leading fence, `\r`) is written in a ```` ```verbatim ```` fence, so any
 * text reads back exactly. Pure.
 */
export function formatHandoff(handoff: HandoffInput): string {
  assertResumePromptFits(handoff.resume_prompt);
  const frontmatter: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(handoff)) {
    if (!sectionFields.has(key) && value !== undefined) frontmatter[key] = value;
  }
  const parts = [`---\n${loadYaml().stringify(frontmatter, { lineWidth: 0 }).trimEnd()}\n---\n`];
  for (const section of handoffSections) {
    const text = handoff[section.field];
    if (text === undefined) continue;
    parts.push(`## ${section.heading}\n\n${encodeSection(text)}\n`);
  }
  return parts.join("\n");
}

function malformed(source: string, line: number, message: string): HandoffError {
  return new HandoffError("malformed-file", `${source}:${line}: ${message}`);
}

/**
 * Splits handoff Markdown into its fields without validating them: frontmatter keys plus
 * one key per section present. With `requireFrontmatter: false` a file may be sections
 * only (what `gstack-handoff write --file` accepts). Throws a `HandoffError` with the line
 * for a structural mistake. Pure.
 */
export function readHandoffFields(
  text: string,
  source = "<handoff>",
  options: { requireFrontmatter?: boolean } = {},
): Record<string, unknown> {
  const lines = text.split("\n");
  const value: Record<string, unknown> = {};
  let end = -1;
  if (lines[0]?.replace(/\r$/, "") === "---") {
    end = 1;
    while (end < lines.length && lines[end]!.replace(/\r$/, "") !== "---") end++;
    if (end >= lines.length) throw malformed(source, 1, "the frontmatter has no closing '---'");
    const document = loadYaml().parseDocument(lines.slice(1, end).join("\n"), { uniqueKeys: true });
    if (document.errors.length > 0) {
      const error = document.errors[0]!;
      const line = (error.linePos?.[0].line ?? 0) + 1;
      throw malformed(source, line, `frontmatter: ${error.message.split("\n")[0]}`);
    }
    const frontmatter = document.toJS() ?? {};
    if (typeof frontmatter !== "object" || Array.isArray(frontmatter)) {
      throw malformed(source, 2, "the frontmatter must be a YAML mapping");
    }
    Object.assign(value, frontmatter);
    for (const field of Object.keys(value)) {
      if (sectionFields.has(field)) {
        throw malformed(source, 2, `'${field}' belongs in its own section, not in the frontmatter`);
      }
    }
  } else if (options.requireFrontmatter !== false) {
    throw malformed(source, 1, "must start with '---' and YAML frontmatter");
  }

  let index = end + 1;
  let current: { field: HandoffSectionField; lines: string[] } | undefined;
  const finish = () => {
    if (!current) return;
    value[current.field] = current.lines.join("\n").trim();
    current = undefined;
  };
  let sawTitle = false;
  let sawSection = false;
  while (index < lines.length) {
    const line = lines[index]!;
    const heading = HEADING_TWO.exec(line);
    if (heading) {
      finish();
      sawSection = true;
      const name = (heading[1] ?? "").trim();
      const section = handoffSections.find(
        (candidate) => candidate.heading.toLowerCase() === name.toLowerCase(),
      );
      if (!section) {
        throw malformed(
          source,
          index + 1,
          `unknown section '## ${name}'; sections are ${handoffSections.map((candidate) => `'## ${candidate.heading}'`).join(", ")}`,
        );
      }
      if (value[section.field] !== undefined)
        throw malformed(source, index + 1, `'## ${section.heading}' appears twice`);
      index++;
      while (index < lines.length && lines[index]!.trim() === "") index++;
      const fence = index < lines.length ? FENCE_OPEN.exec(lines[index]!) : null;
      if (fence) {
        const close = lines.findIndex((candidate, at) => at > index && candidate === fence[1]);
        if (close < 0)
          throw malformed(source, index + 1, `the verbatim block of '## ${section.heading}' is not closed`);
        value[section.field] = lines.slice(index + 1, close).join("\n");
        index = close + 1;
        continue;
      }
      current = { field: section.field, lines: [] };
      continue;
    }
    if (current) current.lines.push(line);
    else if (line.trim() !== "") {
      if (!sawTitle && !sawSection && /^ {0,3}#[ \t]/.test(line)) sawTitle = true;
      else
        throw malformed(source, index + 1, "text outside a section; put it under '## Context' or '## State'");
    }
    index++;
  }
  finish();
  return value;
}

/**
 * Reads a handoff file written by {@link formatHandoff} or by hand. Validates the result
 * against the contracts' handoff schema (a `ContractError` names field and rule); a file
 * whose structure is wrong gives a `HandoffError` with the line. Hand-written files may use
 * the section headings in any order and any case, and may start with a `# title` line. Pure.
 */
export function parseHandoffMarkdown(text: string, source = "<handoff>"): Handoff {
  const value = readHandoffFields(text, source);
  if (typeof value.resume_prompt === "string") assertResumePromptFits(value.resume_prompt);
  return parseValue("handoff", value, { source });
}
