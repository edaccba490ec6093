import type { Nodes, Parents, Root } from "mdast";
import { fromMarkdown } from "mdast-util-from-markdown";
import { clearScanCache, scanMarkdown } from "./markdown-scanner";
import type { CodeSpan, MarkdownBlock, MarkdownStructure } from "./markdown-types";

export type { CodeSpan, MarkdownBlock, MarkdownStructure } from "./markdown-types";

function offsets(node: Nodes): { start: number; end: number } | undefined {
  const start = node.position?.start.offset;
  const end = node.position?.end.offset;
  return start === undefined || end === undefined ? undefined : { start, end };
}

/** An HTML block that may hold blank lines and runs until an end marker (CommonMark kinds 1–5). */
const LONG_HTML: readonly [RegExp, RegExp][] = [
  [/^ {0,3}<(?:script|pre|style|textarea)(?:\s|>|$)/i, /<\/(?:script|pre|style|textarea)>/i],
  [/^ {0,3}<!--/, /-->/],
  [/^ {0,3}<\?/, /\?>/],
  [/^ {0,3}<![A-Za-z]/, />/],
  [/^ {0,3}<!\[CDATA\[/, /\]\]>/],
];
const BLANK_LINE = /^\s*$/;

/**
 * Whether a line starting with this character code, read outside every fence and HTML block,
 * certainly opens neither and is no heading: a visible ASCII character other than `#`, a
 * backtick, `~` or `<` (whitespace, blank lines and anything else take the full check).
 */
function opensNothing(code: number): boolean {
  return code > 0x20 && code < 0x7f && code !== 0x23 && code !== 0x60 && code !== 0x7e && code !== 0x3c;
}

/** Where a line may stand: outside any fence, or inside one opened by `marker`. */
type FenceState = "closed" | `open:${string}:${"top" | "nested"}`;

function fenceOf(line: string): { marker: string; indent: number } | undefined {
  const match = /^( *)(`{3,}|~{3,})(.*)$/.exec(line);
  if (!match) return undefined;
  const marker = match[2] ?? "";
  // A backtick fence's info string holds no backtick (else the line is inline code).
  if (marker[0] === "`" && (match[3] ?? "").includes("`")) return undefined;
  return { marker, indent: (match[1] ?? "").length };
}

/**
 * Every state the next line may be in after `line`, for each state it may be in now. A
 * fence indented by one space or more may sit in a list item, which a line at the margin
 * ends; such uncertainty keeps both readings.
 */
function nextFenceStates(states: ReadonlySet<FenceState>, line: string): Set<FenceState> {
  const next = new Set<FenceState>();
  const fence = fenceOf(line);
  const atMargin = /^\S/.test(line);
  const fromClosed = (): FenceState[] => {
    if (!fence || fence.marker === "") return ["closed"];
    if (fence.indent === 0) return [`open:${fence.marker}:top`];
    if (fence.indent <= 3) return [`open:${fence.marker}:nested`];
    return ["closed", `open:${fence.marker}:nested`];
  };
  for (const state of states) {
    if (state === "closed") {
      for (const candidate of fromClosed()) next.add(candidate);
      continue;
    }
    const [, marker = "", where] = state.split(":");
    const closes =
      fence !== undefined &&
      fence.marker[0] === marker[0] &&
      fence.marker.length >= marker.length &&
      line.trim() === fence.marker;
    if (closes && fence.indent <= 3) next.add("closed");
    else if (closes && where === "nested") {
      next.add("closed");
      next.add(state);
    } else if (where === "nested" && atMargin) {
      next.add(state);
      for (const candidate of fromClosed()) next.add(candidate);
    } else next.add(state);
  }
  return next;
}

/**
 * Cuts Markdown before ATX headings at the margin where no reading of the lines before can
 * leave a fence or an HTML block open. Such a heading ends any paragraph, list or quote
 * before it, so each piece parses exactly as it does inside the whole document; where the
 * cut is unsure there is none.
 */
function sections(markdown: string): { start: number; text: string }[] {
  const pieces: { start: number; text: string }[] = [];
  let pieceStart = 0;
  let states = new Set<FenceState>(["closed"]);
  let htmlEnd: RegExp | undefined;
  let lineStart = 0;
  while (lineStart < markdown.length) {
    const newline = markdown.indexOf("\n", lineStart);
    const lineEnd = newline === -1 ? markdown.length : newline;
    const certain = states.size === 1 && states.has("closed") && htmlEnd === undefined;
    if (certain && opensNothing(markdown.charCodeAt(lineStart))) {
      // Most lines: the state stays as it is, without building the line.
      lineStart = lineEnd + 1;
      continue;
    }
    const line = markdown.slice(lineStart, lineEnd);
    if (certain && /^#{1,6}(?:[ \t]|$)/.test(line) && lineStart > pieceStart) {
      pieces.push({ start: pieceStart, text: markdown.slice(pieceStart, lineStart) });
      pieceStart = lineStart;
    }
    if (htmlEnd !== undefined) {
      // Inside an HTML block a fence line is text, unless the block ended unseen: keep both.
      for (const state of nextFenceStates(states, line)) states.add(state);
      if (htmlEnd.test(line)) htmlEnd = undefined;
    } else {
      const wasClosed = states.has("closed");
      states = nextFenceStates(states, line);
      if (wasClosed && !fenceOf(line)) {
        const kind = LONG_HTML.find(([start]) => start.test(line));
        // The end marker may sit on the opening line itself, after the opening.
        if (kind) {
          if (!kind[1].test(line.replace(kind[0], ""))) htmlEnd = kind[1];
        } else if (/^\s*<[A-Za-z/]/.test(line)) {
          // Other HTML blocks run to the next blank line.
          htmlEnd = BLANK_LINE;
        }
      }
    }
    if (states.size > 16) return [{ start: 0, text: markdown }];
    lineStart = lineEnd + 1;
  }
  pieces.push({ start: pieceStart, text: markdown.slice(pieceStart) });
  return pieces;
}

/** Parsed sections by their text: gstack skills share long sections, and stages reparse. */
const sectionCache = new Map<string, MarkdownStructure>();
let cachedCharacters = 0;
const CACHE_LIMIT = 32 * 1024 * 1024;

/** Whole documents by their text, few: a stage reparses only the text the last one gave. */
const documentCache = new Map<string, MarkdownStructure>();
const DOCUMENT_CACHE_LIMIT = 8;

/** Forgets every parsed section and document (for measuring a cold run). */
export function clearParseCache(): void {
  documentCache.clear();
  sectionCache.clear();
  cachedCharacters = 0;
  clearScanCache();
}

function parseSection(text: string): MarkdownStructure {
  const cached = sectionCache.get(text);
  if (cached) return cached;
  const parsed = scanMarkdown(text, parseWhole) ?? parseWhole(text);
  if (cachedCharacters + text.length > CACHE_LIMIT) {
    sectionCache.clear();
    cachedCharacters = 0;
  }
  sectionCache.set(text, parsed);
  cachedCharacters += text.length;
  return parsed;
}

/**
 * Parses Markdown (CommonMark) and returns the offsets of its blocks and of every code or
 * HTML span, so that each kind of text can be rewritten by its own rules. The document is
 * parsed section by section (see {@link sections}), and sections seen before are not
 * parsed again: the result is the same as one parse of the whole.
 */
export function parseMarkdownStructure(markdown: string): MarkdownStructure {
  // Stages parse a text they left unchanged again; reuse the whole result then.
  const known = documentCache.get(markdown);
  if (known) return known;
  const structure = scanMarkdown(markdown, parseWhole) ?? parseBySection(markdown);
  if (documentCache.size >= DOCUMENT_CACHE_LIMIT) documentCache.clear();
  documentCache.set(markdown, structure);
  return structure;
}

/** The full parse, section by section, of a document the scanner does not read whole. */
function parseBySection(markdown: string): MarkdownStructure {
  const blocks: MarkdownBlock[] = [];
  const spans: CodeSpan[] = [];
  for (const section of sections(markdown)) {
    const parsed = parseSection(section.text);
    for (const block of parsed.blocks) {
      blocks.push({ ...block, start: block.start + section.start, end: block.end + section.start });
    }
    for (const span of parsed.spans) {
      spans.push({ ...span, start: span.start + section.start, end: span.end + section.start });
    }
  }
  return { blocks, spans };
}

/** One CommonMark parse of the whole text, without sections or cache. */
export function parseWhole(markdown: string): MarkdownStructure {
  const tree: Root = fromMarkdown(markdown);
  const blocks: MarkdownBlock[] = [];
  const spans: CodeSpan[] = [];

  const visit = (node: Nodes, inListItem: boolean): void => {
    const range = offsets(node);
    switch (node.type) {
      case "code":
        if (range) {
          spans.push({ kind: "fence", ...range, value: node.lang ?? "" });
          if (!inListItem) blocks.push({ type: "code", ...range, lang: node.lang ?? "" });
        }
        return;
      case "inlineCode":
        if (range) spans.push({ kind: "inline-code", ...range, value: node.value });
        return;
      case "html":
        if (range) {
          spans.push({ kind: "html", ...range, value: node.value });
          if (!inListItem) blocks.push({ type: "html", ...range });
        }
        return;
      case "heading":
        if (range) blocks.push({ type: "heading", ...range, depth: node.depth });
        break;
      case "paragraph":
        if (range && !inListItem) blocks.push({ type: "paragraph", ...range });
        break;
      case "listItem":
        if (range && !inListItem) blocks.push({ type: "list-item", ...range });
        for (const child of node.children) visit(child, true);
        return;
      case "blockquote":
        if (range && !inListItem) blocks.push({ type: "blockquote", ...range });
        for (const child of node.children) visit(child, true);
        return;
      case "thematicBreak":
        if (range && !inListItem) blocks.push({ type: "thematic-break", ...range });
        return;
      default:
        break;
    }
    if ("children" in node) {
      for (const child of (node as Parents).children) visit(child as Nodes, inListItem);
    }
  };
  visit(tree, false);
  spans.sort((left, right) => left.start - right.start);
  return { blocks, spans };
}

/** One replacement of `source.slice(start, end)`. */
export interface TextEdit {
  start: number;
  end: number;
  replacement: string;
}

/** Applies non-overlapping edits; an edit inside an earlier one is dropped. */
export function applyEdits(source: string, edits: readonly TextEdit[]): string {
  const sorted = [...edits].sort((left, right) => left.start - right.start || left.end - right.end);
  let output = "";
  let cursor = 0;
  for (const edit of sorted) {
    if (edit.start < cursor) continue;
    output += source.slice(cursor, edit.start) + edit.replacement;
    cursor = edit.end;
  }
  return output + source.slice(cursor);
}
