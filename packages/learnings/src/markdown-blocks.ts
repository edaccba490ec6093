/** A heading and the lines under it, up to the next heading outside a code fence. */
export interface MarkdownBlock {
  /** 1-based line of the heading, or of the first line for text before any heading. */
  line: number;
  /** The heading line, or undefined for the text before the first heading. */
  heading: string | undefined;
  /** Heading level 1–6 (0 for text before the first heading). */
  level: number;
  /** The heading's text without the leading `#`s. */
  title: string;
  /** The lines under the heading, without line terminators. */
  lines: string[];
}

const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** What {@link fenceStep} answers for a line that opens or closes no fence. */
const NOT_A_FENCE = Symbol("not a fence");

/**
 * The fence open after `line` (undefined: none) when the line opens or closes one, given the
 * fence open before it and the line's first character code; {@link NOT_A_FENCE} otherwise. A
 * fence starts with spaces, '`' or '~', never with '#'.
 */
function fenceStep(
  fence: string | undefined,
  line: string,
  first: number,
): string | undefined | typeof NOT_A_FENCE {
  const match = first === 35 ? null : FENCE.exec(line);
  if (!match) return NOT_A_FENCE;
  const marker = match[1]!;
  if (fence === undefined) return marker;
  return marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker
    ? undefined
    : fence;
}

/**
 * Splits Markdown into heading blocks. Lines are split on `\n` with a trailing `\r`
 * removed, so a file saved with Windows line endings reads the same; a leading byte-order
 * mark is dropped. `#` lines inside fenced code do not start a block.
 */
export function splitMarkdownBlocks(text: string): MarkdownBlock[] {
  return [...eachMarkdownBlock(text)];
}

/**
 * {@link splitMarkdownBlocks} one block at a time: a block's lines are only made when it is
 * reached, so a reader that keeps few blocks keeps few lines alive.
 */
export function* eachMarkdownBlock(text: string): Generator<MarkdownBlock> {
  const source = withoutByteOrderMark(text);
  let current: MarkdownBlock = { line: 1, heading: undefined, level: 0, title: "", lines: [] };
  let fence: string | undefined;
  let start = 0;
  for (let index = 0; start < source.length; index++) {
    let end = source.indexOf("\n", start);
    if (end === -1) end = source.length;
    let line = source.slice(start, end);
    start = end + 1;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    const first = line.charCodeAt(0);
    // Only lines starting with a space, '#', '`' or '~' can be a heading or a fence.
    if (first !== 32 && first !== 35 && first !== 96 && first !== 126) {
      current.lines.push(line);
      continue;
    }
    const fenceAfter = fenceStep(fence, line, first);
    if (fenceAfter !== NOT_A_FENCE) {
      fence = fenceAfter;
      current.lines.push(line);
      continue;
    }
    const heading = fence === undefined ? HEADING.exec(line) : null;
    if (heading) {
      if (current.heading !== undefined || current.lines.length > 0) yield current;
      current = {
        line: index + 1,
        heading: line,
        level: heading[1]!.length,
        title: heading[2] ?? "",
        lines: [],
      };
      continue;
    }
    current.lines.push(line);
  }
  if (current.heading !== undefined || current.lines.length > 0) yield current;
}

/**
 * A block as {@link eachMarkdownSpan} finds it: where its lines are in the text (without a
 * leading byte-order mark), not the lines themselves.
 */
export interface MarkdownSpan extends Omit<MarkdownBlock, "lines"> {
  /** Offset of the block's first line under the heading (of its first line, for text before any heading). */
  start: number;
  /** Offset just past the block's last line (its newline included, when it has one). */
  end: number;
}

/**
 * The blocks of {@link eachMarkdownBlock} as offsets into `text` without a leading byte-order
 * mark (see {@link withoutByteOrderMark}), making no string per line: a reader that needs the
 * lines of only a few blocks takes them with {@link spanLines}. The same loop as
 * eachMarkdownBlock's, keeping offsets where that one keeps lines.
 */
export function* eachMarkdownSpan(text: string): Generator<MarkdownSpan> {
  const source = withoutByteOrderMark(text);
  const length = source.length;
  let current: MarkdownSpan = { line: 1, heading: undefined, level: 0, title: "", start: 0, end: 0 };
  // Lines in the current block (counted, as none are kept).
  let count = 0;
  let fence: string | undefined;
  let start = 0;
  for (let index = 0; start < length; index++) {
    let end = source.indexOf("\n", start);
    if (end === -1) end = length;
    const lineStart = start;
    start = end + 1;
    const first = source.charCodeAt(lineStart);
    if (first !== 32 && first !== 35 && first !== 96 && first !== 126) {
      count++;
      current.end = Math.min(start, length);
      continue;
    }
    const line = withoutCarriageReturn(source.slice(lineStart, end));
    const fenceAfter = fenceStep(fence, line, first);
    if (fenceAfter !== NOT_A_FENCE) {
      fence = fenceAfter;
      count++;
      current.end = Math.min(start, length);
      continue;
    }
    const heading = fence === undefined ? HEADING.exec(line) : null;
    if (heading) {
      if (current.heading !== undefined || count > 0) yield current;
      const next = Math.min(start, length);
      current = {
        line: index + 1,
        heading: line,
        level: heading[1]!.length,
        title: heading[2] ?? "",
        start: next,
        end: next,
      };
      count = 0;
      continue;
    }
    count++;
    current.end = Math.min(start, length);
  }
  if (current.heading !== undefined || count > 0) yield current;
}

/** The text {@link eachMarkdownSpan}'s offsets are into. */
export function withoutByteOrderMark(text: string): string {
  return text.startsWith("\ufeff") ? text.slice(1) : text;
}

/** The lines of a span, exactly as {@link eachMarkdownBlock} gives them for the same block. */
export function spanLines(source: string, span: { start: number; end: number }): string[] {
  const lines: string[] = [];
  let start = span.start;
  while (start < span.end) {
    let end = source.indexOf("\n", start);
    if (end === -1 || end > span.end) end = span.end;
    lines.push(withoutCarriageReturn(source.slice(start, end)));
    start = end + 1;
  }
  return lines;
}

function withoutCarriageReturn(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}
