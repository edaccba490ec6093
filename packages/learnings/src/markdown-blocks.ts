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
  const source = text.startsWith("\ufeff") ? text.slice(1) : text;
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
    const fenceMatch = FENCE.exec(line);
    if (fenceMatch) {
      const marker = fenceMatch[1]!;
      if (fence === undefined) fence = marker;
      else if (marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker)
        fence = undefined;
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
