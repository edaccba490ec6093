import { type AuthoredLearning, parseAuthoredLearning } from "./authored-learning";
import type { LearningEntry } from "./learning-entry";
import {
  eachMarkdownBlock,
  eachMarkdownSpan,
  type MarkdownBlock,
  spanLines,
  withoutByteOrderMark,
} from "./markdown-blocks";
import {
  decodeSection,
  findDataLine,
  isLearningTitle,
  isUneditedSection,
  isUneditedSpan,
  parseLearningTitle,
  renderSection,
  TYPE_ORDER,
} from "./memory-section";

const TITLE_PREFIX = "gstack learnings: ";
const HEADER_COMMENT =
  "<!-- gstack-learnings v1. Written by `gstack-learnings sync` from gstack's learnings.jsonl. " +
  "Edit the quoted insight of a section to update it in gstack. Add a learning as a new section: " +
  '"## Learning: <type>/<key>", the insight below it, then optional lines "- confidence: 1-10", ' +
  '"- files: a.ts, b.ts", "- source: observed". -->';

/** A section of a memory file that {@link renderMemoryFile} wrote. */
export interface GeneratedSection {
  line: number;
  entry: LearningEntry;
  /** The quoted insight was edited since it was written. */
  edited: boolean;
  /** The section's text as it stands in the file when it was edited (empty otherwise). */
  text: string;
}

/** A hand-written learning section. */
export interface AuthoredSection {
  line: number;
  learning: AuthoredLearning;
  /** The section's original text, kept if it cannot be imported. */
  text: string;
}

/** A section that looks like a learning but cannot be used, and why. */
export interface SectionProblem {
  line: number;
  message: string;
  text: string;
}

/** Everything found in one Markdown memory file. */
export interface ParsedMemoryFile {
  generated: GeneratedSection[];
  authored: AuthoredSection[];
  problems: SectionProblem[];
  /** Text that is not a learning section (notes, other headings), in file order. */
  other: { line: number; text: string }[];
  /**
   * Text with no heading of its own: typed under the file's title, or before any heading. It is
   * written back under the title, since after the sections it would run on into the last one.
   */
  underTitle: { line: number; text: string }[];
}

function blockText(heading: string | undefined, lines: readonly string[]): string {
  const all = [...(heading === undefined ? [] : [heading]), ...lines];
  while (all.length > 0 && all[all.length - 1]!.trim() === "") all.pop();
  return all.join("\n");
}

/**
 * Reads a Markdown memory file: sections written by this package (decoded exactly),
 * sections written by hand in the learning form, broken learning sections, and all other
 * text. Pure; `text` is the file's content. With `editedOnly`, sections written by this
 * package and not edited since are left out of `generated` (all a sync needs; saves
 * decoding every entry).
 */
export function parseMemoryFile(text: string, options: { editedOnly?: boolean } = {}): ParsedMemoryFile {
  const parsed: ParsedMemoryFile = { generated: [], authored: [], problems: [], other: [], underTitle: [] };
  if (!options.editedOnly) return parseMemoryFileByLines(text, false);
  for (const block of eachBlockToRead(text)) readBlock(parsed, block, true);
  return parsed;
}

/**
 * {@link parseMemoryFile} making the lines of every block: the plain reading the shortcut of
 * `editedOnly` must agree with.
 */
export function parseMemoryFileByLines(text: string, editedOnly: boolean): ParsedMemoryFile {
  const parsed: ParsedMemoryFile = { generated: [], authored: [], problems: [], other: [], underTitle: [] };
  for (const block of eachMarkdownBlock(text)) readBlock(parsed, block, editedOnly);
  return parsed;
}

/**
 * The blocks of a memory file less the sections this package wrote and nobody edited since,
 * which are told apart without making their lines (see {@link isUneditedSpan}); what is left
 * is read as {@link parseMemoryFile} always reads it.
 */
function* eachBlockToRead(text: string): Generator<MarkdownBlock> {
  const source = withoutByteOrderMark(text);
  // Lines with a carriage return lose it when read; only a file without any takes the shortcut.
  const plain = !source.includes("\r");
  for (const span of eachMarkdownSpan(text)) {
    if (
      plain &&
      span.heading !== undefined &&
      isLearningTitle(span.title) &&
      isUneditedSpan(source, span.start, span.end)
    ) {
      continue;
    }
    const { line, heading, level, title } = span;
    yield { line, heading, level, title, lines: spanLines(source, span) };
  }
}

function readBlock(parsed: ParsedMemoryFile, block: MarkdownBlock, editedOnly: boolean): void {
  const dataIndex =
    block.heading !== undefined && parseLearningTitle(block.title) !== undefined
      ? findDataLine(block.lines)
      : -1;
  if (dataIndex !== -1) {
    if (editedOnly && isUneditedSection(block.lines, dataIndex)) return;
    try {
      const decoded = decodeSection(block.lines, dataIndex);
      if (editedOnly && !decoded.edited) return;
      // The text is only ever needed to keep an edited section; unchanged ones are rebuilt.
      const text = decoded.edited ? blockText(block.heading, block.lines) : "";
      parsed.generated.push({ line: block.line, entry: decoded.entry, edited: decoded.edited, text });
    } catch (error) {
      const message = `damaged learning section: ${(error as Error).message}`;
      parsed.problems.push({ line: block.line, message, text: blockText(block.heading, block.lines) });
    }
    return;
  }
  const authored = block.heading === undefined ? undefined : parseAuthoredLearning(block.title, block.lines);
  if (authored === undefined) {
    const own = block.level === 1 && block.title.startsWith(TITLE_PREFIX);
    const lines = own ? block.lines.filter((line) => line !== HEADER_COMMENT) : block.lines;
    const kept = own ? lines : [block.heading, ...lines].filter((line) => line !== undefined);
    if (!kept.some((line) => line.trim() !== "")) return;
    if (own || block.heading === undefined) {
      const first = kept.findIndex((line) => line.trim() !== "");
      // The line of that first line in the file: after the title's own line, if it has one.
      const at = block.lines.indexOf(kept[first]!) + (block.heading === undefined ? 0 : 1);
      parsed.underTitle.push({ line: block.line + at, text: blockText(undefined, kept.slice(first)) });
    } else {
      parsed.other.push({ line: block.line, text: blockText(undefined, kept) });
    }
    return;
  }
  const text = blockText(block.heading, block.lines);
  if (authored.ok) parsed.authored.push({ line: block.line, learning: authored.learning, text });
  else parsed.problems.push({ line: block.line, message: authored.reason, text });
}

/** The order of sections in a memory file: by type (gstack's order), then key. */
export function compareEntries(
  left: { type: string; key: string },
  right: { type: string; key: string },
): number {
  const byType = TYPE_ORDER.indexOf(left.type) - TYPE_ORDER.indexOf(right.type);
  if (byType !== 0) return byType;
  return left.key < right.key ? -1 : left.key > right.key ? 1 : 0;
}

/** The memory file's first lines: its title and the comment on how to edit it. */
export function memoryFileHeader(slug: string): string {
  return `# ${TITLE_PREFIX}${slug}\n\n${HEADER_COMMENT}\n`;
}

/** One kept block as it follows the sections. */
export function keptBlockText(text: string): string {
  return `\n${text.replace(/\n+$/, "")}\n`;
}

/** Entries in the order of their sections: by type (gstack's order), then key; stable. */
function sortForFile(entries: readonly LearningEntry[]): LearningEntry[] {
  const byType = new Map<number, LearningEntry[]>();
  for (const entry of entries) {
    const order = TYPE_ORDER.indexOf(entry.type);
    const bucket = byType.get(order);
    if (bucket === undefined) byType.set(order, [entry]);
    else bucket.push(entry);
  }
  const sorted: LearningEntry[] = [];
  for (const order of [...byType.keys()].sort((left, right) => left - right)) {
    const bucket = byType.get(order)!;
    bucket.sort((left, right) => (left.key < right.key ? -1 : left.key > right.key ? 1 : 0));
    for (const entry of bucket) sorted.push(entry);
  }
  return sorted;
}

/**
 * Renders the OpenClaw memory file of one project: a title, a comment telling readers how
 * to edit and add learnings, the text a person typed under the title (`underTitle`), one
 * section per learning (ordered by type, then key, so the file only changes where a learning
 * changed), then any hand-written text to keep (each block starting with its heading).
 * Deterministic: the same input gives the same bytes.
 */
export function renderMemoryFile(
  slug: string,
  entries: readonly LearningEntry[],
  keep: readonly string[] = [],
  underTitle: readonly string[] = [],
): string {
  const parts = [memoryFileHeader(slug)];
  for (const text of underTitle) parts.push(keptBlockText(text));
  for (const entry of sortForFile(entries)) parts.push(`\n${renderSection(entry)}`);
  for (const text of keep) parts.push(keptBlockText(text));
  return parts.join("");
}

/**
 * {@link renderMemoryFile} as UTF-8 bytes, with the byte offsets where the sections (each a
 * blank line, then the section) start and end.
 */
export function renderMemoryFileBytes(
  slug: string,
  entries: readonly LearningEntry[],
  keep: readonly string[] = [],
  underTitle: readonly string[] = [],
): { bytes: Buffer; sectionsStart: number; sectionsEnd: number } {
  // Sections are encoded some 32 thousand characters at a time straight into one buffer, so the
  // rendered text never piles up on the JavaScript heap (a chunk dies young, before the collector
  // has to copy it) and the bytes are not copied again to join them.
  const sorted = sortForFile(entries);
  const out = new ByteBuilder(65_536);
  out.append(memoryFileHeader(slug));
  for (const text of underTitle) out.append(keptBlockText(text));
  const sectionsStart = out.length;
  let pending = "";
  let done = 0;
  let sized = false;
  for (const entry of sorted) {
    pending += `\n${renderSection(entry)}`;
    done++;
    if (pending.length >= CHUNK) {
      out.append(pending);
      pending = "";
      // The first chunk tells how large the rest will be, near enough (the buffer doubles if not).
      if (!sized && done < sorted.length) {
        sized = true;
        const perSection = (out.length - sectionsStart) / done;
        out.reserve(Math.ceil(out.length + perSection * (sorted.length - done) * 1.1) + CHUNK * 3);
      }
    }
  }
  out.append(pending);
  const sectionsEnd = out.length;
  let kept = "";
  for (const text of keep) kept += keptBlockText(text);
  out.append(kept);
  return { bytes: out.bytes(), sectionsStart, sectionsEnd };
}

/** Characters of sections encoded at a time. */
const CHUNK = 32_768;

/** Bytes written as UTF-8 text by text into one buffer that grows when it has to. */
class ByteBuilder {
  private buffer: Buffer;
  length = 0;

  constructor(capacity: number) {
    this.buffer = Buffer.allocUnsafe(capacity);
  }

  /** Makes room for `capacity` bytes in all. */
  reserve(capacity: number): void {
    if (capacity <= this.buffer.length) return;
    const bigger = Buffer.allocUnsafe(capacity);
    this.buffer.copy(bigger, 0, 0, this.length);
    this.buffer = bigger;
  }

  append(text: string): void {
    // A UTF-16 code unit takes at most 3 bytes of UTF-8 (a surrogate pair, 4 for two units).
    const most = text.length * 3;
    if (this.buffer.length - this.length < most)
      this.reserve(Math.max(this.buffer.length * 2, this.length + most));
    this.length += this.buffer.write(text, this.length, "utf8");
  }

  /** The bytes written (a view of the buffer, not a copy). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.length);
  }
}
