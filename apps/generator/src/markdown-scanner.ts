import type { CodeSpan, MarkdownBlock, MarkdownStructure } from "./markdown-types";

/**
 * A line-by-line reader of the CommonMark structure the rules read: headings, paragraphs,
 * top-level list items, quotes, thematic breaks, code (fenced and indented), HTML blocks,
 * inline code and inline HTML, with the offsets one CommonMark parse gives them. It reads
 * the common forms only: on anything it does not read with certainty (tabs, carriage
 * returns, link definitions, images and links whose destination holds code or HTML,
 * unclosed fences or HTML blocks, inline HTML over two lines, list items without content,
 * the lines where the CommonMark parser departs from the specification) it gives up and
 * returns `undefined`, and the caller parses with the full parser instead. `parseParagraph`,
 * when given, reads such a link paragraph at the top level, so the rest is still scanned.
 */
export function scanMarkdown(
  markdown: string,
  parseParagraph?: (text: string) => MarkdownStructure,
): MarkdownStructure | undefined {
  if (UNREAD_CHARACTERS.test(markdown)) return undefined;
  try {
    return new Scanner(markdown, parseParagraph).run();
  } catch (error) {
    if (error === UNSURE) return undefined;
    throw error;
  }
}

/**
 * Sections read before, by their text: a section runs from a heading that ends everything
 * open before it to the next heading at the margin, and reads the same in any text (gstack's
 * skills share long sections, and each stage changes few of them).
 */
const sectionCache = new Map<string, MarkdownStructure>();
let sectionCacheCharacters = 0;
const SECTION_CACHE_LIMIT = 16 * 1024 * 1024;
/** The start of the next line that may be a heading at the margin. */
const HEADING_AFTER = /\n#{1,6}(?=[ \n]|$)/g;

/** Forgets every section read (for measuring a cold run). */
export function clearScanCache(): void {
  sectionCache.clear();
  sectionCacheCharacters = 0;
}

/** A link's destination with nothing in it the inline rules read: no code, HTML, escape or title. */
const PLAIN_DESTINATION = /\]\([^\s()`<>\\[\]]*\)/y;

/**
 * Whether every `](` in the text opens a plain destination, and no image is there. Such links
 * leave code spans and inline HTML as they are: a code span binds tighter than a link's
 * brackets, and only a destination or title can hold a backtick or `<` a link consumes;
 * an image's text is no inline code.
 */
function plainLinksOnly(text: string): boolean {
  if (text.includes("![")) return false;
  for (let at = text.indexOf("]("); at !== -1; at = text.indexOf("](", at + 2)) {
    PLAIN_DESTINATION.lastIndex = at;
    if (!PLAIN_DESTINATION.test(text)) return false;
  }
  return true;
}

/** Characters the scanner does not read: tabs (their columns), carriage returns, NUL. */
const UNREAD_CHARACTERS = /[\t\r\0]/;

/** Thrown inside the scanner when the text takes a form it does not read with certainty. */
const UNSURE = Symbol("unsure");

function unsure(): never {
  throw UNSURE;
}

interface Container {
  kind: "quote" | "item";
  /** Offset of the `>` or of the list marker. */
  start: number;
  /** End of the last thing inside it. */
  end: number;
  /** Whether it sits in no list item or quote. */
  topLevel: boolean;
  /** For a list item: the columns its content is indented by, from the line's margin. */
  contentIndent: number;
  /** For a list item: whether anything has been put in it. */
  hasContent: boolean;
}

/** A line of inline text: from its first character, or from after its container prefixes. */
interface InlineLine {
  from: number;
  to: number;
  /** Where the line starts once its container prefixes are taken off (at or before `from`). */
  prefix: number;
}

type Leaf =
  | { kind: "paragraph"; start: number; lines: InlineLine[] }
  | { kind: "fence"; start: number; marker: string; indent: number; lang: string }
  | { kind: "indented"; start: number; lastEnd: number }
  | { kind: "html"; start: number; type: number; lines: { from: number; to: number }[] };

const SPECIAL_START = /^[#`~*+_=<>0-9-]/;
const ATX = /^(#{1,6})(?: +|$)/;
const FENCE_OPEN = /^(`{3,}|~{3,})(.*)$/;
const FENCE_CLOSE = /^(`{3,}|~{3,}) *$/;
const SETEXT = /^(=+|-+) *$/;
const THEMATIC = /^(?:(?:\* *){3,}|(?:- *){3,}|(?:_ *){3,})$/;
const BULLET = /^[*+-]/;
const ORDERED = /^(\d{1,9})([.)])/;

const HTML_BLOCK_START: readonly RegExp[] = [
  /^<(?:script|pre|style|textarea)(?:[ \t]|>|$)/i,
  /^<!--/,
  /^<\?/,
  /^<![A-Za-z]/,
  /^<!\[CDATA\[/,
  /^<\/?(?:address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h[1-6]|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|track|ul)(?:[ \t]|\/?>|$)/i,
];
const HTML_BLOCK_END: readonly RegExp[] = [/<\/(?:script|pre|style|textarea)>/i, /-->/, /\?>/, />/, /\]\]>/];
const ATTRIBUTE = `(?:[ \\t\\n]+[A-Za-z_:][A-Za-z0-9_.:-]*(?:[ \\t\\n]*=[ \\t\\n]*(?:[^ \\t\\n"'=<>\`]+|'[^']*'|"[^"]*"))?)`;
const OPEN_TAG = `<[A-Za-z][A-Za-z0-9-]*${ATTRIBUTE}*[ \\t\\n]*\\/?>`;
const CLOSING_TAG = "<\\/[A-Za-z][A-Za-z0-9-]*[ \\t\\n]*>";
const HTML_BLOCK_7 = new RegExp(`^(?:${OPEN_TAG}|${CLOSING_TAG})[ \\t]*$`);
/** Inline HTML (CommonMark 0.31), tried at a `<`. */
const INLINE_HTML = new RegExp(
  `${OPEN_TAG}|${CLOSING_TAG}|<!-->|<!--->|<!--[\\s\\S]*?-->|<\\?[\\s\\S]*?\\?>|<![A-Za-z][^>]*>|<!\\[CDATA\\[[\\s\\S]*?\\]\\]>`,
  "y",
);
const AUTOLINK =
  /<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^\0- <>\x7f]*>|<[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*>/y;
const ASCII_PUNCTUATION = /[!-/:-@[-`{-~]/;
const INLINE_START = /[\\`<]/g;
/**
 * The first line of a paragraph that opens like a link definition but certainly is not one:
 * a plain label and destination followed on the line by text that cannot open a title.
 */
const NOT_A_DEFINITION = /^\[[^[\]\\\n]+\]: *[^\s<]\S* +[^\s"'(]/;

class Scanner {
  private readonly blocks: MarkdownBlock[] = [];
  private readonly spans: CodeSpan[] = [];
  private readonly open: Container[] = [];
  /** The open paragraph, code or HTML block, if any (it sits in the innermost open container). */
  private leaf: Leaf | undefined;
  /** Offsets of the line being read: its first character, and its newline or the text's end. */
  private lineStart = 0;
  private lineEnd = 0;
  /** Offset within the source the line is read from, after the matched container prefixes. */
  private offset = 0;

  /**
   * @param parseParagraph The full parser, for a top-level paragraph holding a link: the
   *   scanner does not read links, and such a paragraph parses alone as it does in place.
   */
  constructor(
    private readonly source: string,
    private readonly parseParagraph?: (text: string) => MarkdownStructure,
  ) {}

  run(): MarkdownStructure {
    const source = this.source;
    let lineStart = 0;
    /** The section being read since its heading, to be remembered once the next one is reached. */
    let reading: { start: number; blocks: number; spans: number } | undefined;
    while (lineStart < source.length) {
      if (source.charCodeAt(lineStart) === 0x23 && this.atSectionStart(lineStart)) {
        // The heading ends every open block, as reading its line would: close them now.
        this.closeLeaf();
        this.closeContainers(0);
        if (reading) this.remember(reading, lineStart);
        reading = undefined;
        HEADING_AFTER.lastIndex = lineStart;
        const next = HEADING_AFTER.exec(source);
        if (next) {
          const end = next.index + 1;
          const known = sectionCache.get(source.slice(lineStart, end));
          if (known) {
            for (const block of known.blocks) {
              this.blocks.push({ ...block, start: block.start + lineStart, end: block.end + lineStart });
            }
            for (const span of known.spans) {
              this.spans.push({ ...span, start: span.start + lineStart, end: span.end + lineStart });
            }
            lineStart = end;
            continue;
          }
          reading = { start: lineStart, blocks: this.blocks.length, spans: this.spans.length };
        }
      }
      const newline = source.indexOf("\n", lineStart);
      const lineEnd = newline === -1 ? source.length : newline;
      this.lineStart = lineStart;
      this.lineEnd = lineEnd;
      this.readLine();
      lineStart = lineEnd + 1;
    }
    this.closeLeaf();
    this.closeContainers(0);
    this.spans.sort((left, right) => left.start - right.start);
    return { blocks: this.blocks, spans: this.spans };
  }

  /**
   * Whether the line at `start` is a heading at the margin that ends everything open
   * before it: one outside a fence or HTML block. From there on, what is read depends only
   * on the text from there.
   */
  private atSectionStart(start: number): boolean {
    const kind = this.leaf?.kind;
    if (kind === "fence" || kind === "html") return false;
    let at = start;
    while (at < this.source.length && at - start < 7 && this.source.charCodeAt(at) === 0x23) at++;
    const hashes = at - start;
    if (hashes > 6) return false;
    return (
      at === this.source.length || this.source.charCodeAt(at) === 0x20 || this.source.charCodeAt(at) === 0x0a
    );
  }

  /** Remembers what a section read, relative to its start, for the next text holding it. */
  private remember(reading: { start: number; blocks: number; spans: number }, end: number): void {
    const text = this.source.slice(reading.start, end);
    if (sectionCacheCharacters + text.length > SECTION_CACHE_LIMIT) clearScanCache();
    const shift = reading.start;
    sectionCache.set(text, {
      blocks: this.blocks
        .slice(reading.blocks)
        .map((block) => ({ ...block, start: block.start - shift, end: block.end - shift })),
      spans: this.spans
        .slice(reading.spans)
        .map((span) => ({ ...span, start: span.start - shift, end: span.end - shift })),
    });
    sectionCacheCharacters += text.length;
  }

  /** First offset at or after `from` on the line that is not a space. */
  private nonspace(from: number): number {
    let at = from;
    while (at < this.lineEnd && this.source.charCodeAt(at) === 0x20) at++;
    return at;
  }

  private readLine(): void {
    const source = this.source;
    this.offset = this.lineStart;
    // 1. Which open containers the line continues.
    let matched = 0;
    for (; matched < this.open.length; matched++) {
      const container = this.open[matched]!;
      const first = this.nonspace(this.offset);
      const blank = first === this.lineEnd;
      if (container.kind === "quote") {
        if (first - this.offset <= 3 && source.charCodeAt(first) === 0x3e) {
          this.offset = first + 1;
          if (source.charCodeAt(this.offset) === 0x20) this.offset++;
          continue;
        }
        break;
      }
      if (blank) {
        if (!container.hasContent) unsure();
        this.offset = first;
        continue;
      }
      if (first - this.offset >= container.contentIndent) {
        this.offset += container.contentIndent;
        continue;
      }
      break;
    }
    const allMatched = matched === this.open.length;
    // The first container not matched is a list item: the list itself still matches.
    let listMatched = !allMatched && this.open[matched]!.kind === "item";
    // Whether a list item here interrupts (so may not begin with a number other than 1 or
    // be empty): as the parser decides it, once per line, from what was open at its start.
    const interrupt: boolean | undefined = allMatched
      ? this.leaf?.kind === "paragraph" || this.leaf?.kind === "indented"
      : listMatched
        ? false
        : undefined;

    // 2. An open fence, HTML block or indented code takes the line when all containers match.
    const leaf = this.leaf;
    if (allMatched && leaf !== undefined && leaf.kind !== "paragraph") {
      if (this.continueLeaf(leaf)) return;
    }

    // 3. New blocks.
    let paragraphHere = allMatched && this.leaf?.kind === "paragraph";
    let lazyPossible = !allMatched && this.leaf?.kind === "paragraph";
    let openedContainer = false;
    for (;;) {
      const first = this.nonspace(this.offset);
      const indent = first - this.offset;
      const blank = first === this.lineEnd;
      const code = source.charCodeAt(first);
      const indented = indent >= 4;
      if (blank) {
        // A blank line: it ends a paragraph; containers not matched close.
        // A list item opened with nothing in it was declined above; a quote may be empty.
        if (openedContainer && this.open[this.open.length - 1]?.kind !== "quote") unsure();
        if (!allMatched || this.leaf?.kind === "paragraph") this.closeLeaf();
        this.closeContainers(matched);
        this.noteQuoteLine();
        return;
      }
      const rest = source.slice(first, this.lineEnd);
      if (!indented && !SPECIAL_START.test(rest)) break;
      if (!indented && code === 0x3e) {
        // A block quote.
        this.startContainer(matched);
        const quote: Container = {
          kind: "quote",
          start: first,
          end: first + 1,
          topLevel: this.open.length === 0,
          contentIndent: 0,
          hasContent: false,
        };
        this.open.push(quote);
        matched = this.open.length;
        this.offset = first + 1;
        if (source.charCodeAt(this.offset) === 0x20) this.offset++;
        paragraphHere = false;
        lazyPossible = false;
        listMatched = false;
        openedContainer = true;
        continue;
      }
      if (!indented) {
        const atx = ATX.exec(rest);
        if (atx) {
          this.startContainer(matched);
          this.heading(first, atx[1]!.length, first + atx[0].length);
          this.noteQuoteLine();
          return;
        }
        const fence = FENCE_OPEN.exec(rest);
        if (fence && !(fence[1]![0] === "`" && fence[2]!.includes("`"))) {
          this.startContainer(matched);
          const info = fence[2]!.trim();
          if (info.includes("\\") || info.includes("&")) unsure();
          this.leaf = {
            kind: "fence",
            start: first,
            marker: fence[1]!,
            indent,
            lang: info.split(" ")[0] ?? "",
          };
          this.noteQuoteLine();
          return;
        }
        if (code === 0x3c) {
          const type = this.htmlBlockType(rest, paragraphHere || lazyPossible);
          if (type !== 0) {
            this.startContainer(matched);
            const html: Leaf = { kind: "html", start: this.offset, type, lines: [] };
            this.leaf = html;
            this.htmlLine(html);
            return;
          }
        }
        if (paragraphHere && SETEXT.test(rest)) {
          const paragraph = this.leaf as Extract<Leaf, { kind: "paragraph" }>;
          this.leaf = undefined;
          this.setextHeading(paragraph, rest[0] === "=" ? 1 : 2);
          this.noteQuoteLine();
          return;
        }
        if (THEMATIC.test(rest)) {
          this.startContainer(matched);
          this.push({ type: "thematic-break", start: first, end: this.lineEnd });
          this.noteQuoteLine();
          return;
        }
      }
      if (!indented || listMatched) {
        const item = this.listItem(first, rest, interrupt);
        // An item indented four columns or more beside a wider one: the parser differs, not read.
        if (item && indented) unsure();
        if (item) {
          this.startContainer(matched);
          const topLevel = this.open.length === 0;
          // The item's indent is counted from the margin its line is read from.
          const container: Container = {
            kind: "item",
            start: first,
            end: first + item.markerLength,
            topLevel,
            contentIndent: indent + item.padding,
            hasContent: false,
          };
          this.open.push(container);
          matched = this.open.length;
          this.offset = first + item.padding;
          if (this.offset > this.lineEnd) unsure();
          paragraphHere = false;
          lazyPossible = false;
          listMatched = false;
          openedContainer = true;
          continue;
        }
      }
      if (indented && !paragraphHere && !lazyPossible) {
        // Indented code on a line that closes a container: the parser splits it, not read here.
        if (!allMatched) unsure();
        this.startContainer(matched);
        this.leaf = { kind: "indented", start: this.offset, lastEnd: this.lineEnd };
        this.noteQuoteLine();
        return;
      }
      break;
    }
    // 4. Text: a paragraph continues (perhaps lazily) or begins.
    const first = this.nonspace(this.offset);
    if ((paragraphHere || lazyPossible) && !openedContainer) {
      // A lazy line opening with HTML: the parser reads some as HTML blocks.
      if (!paragraphHere && source.charCodeAt(first) === 0x3c) unsure();
      const paragraph = this.leaf as Extract<Leaf, { kind: "paragraph" }>;
      paragraph.lines.push({ from: first, to: this.lineEnd, prefix: this.offset });
      if (paragraphHere) this.noteQuoteLine();
      return;
    }
    this.startContainer(matched);
    this.leaf = {
      kind: "paragraph",
      start: first,
      lines: [{ from: first, to: this.lineEnd, prefix: first }],
    };
    this.noteQuoteLine();
  }

  /** Reads the line into an open fence, HTML block or indented code; false when it ends it first. */
  private continueLeaf(leaf: Exclude<Leaf, { kind: "paragraph" }>): boolean {
    const source = this.source;
    const first = this.nonspace(this.offset);
    const blank = first === this.lineEnd;
    if (leaf.kind === "fence") {
      if (first - this.offset <= 3 && source.startsWith(leaf.marker[0]!, first)) {
        const close = FENCE_CLOSE.exec(source.slice(first, this.lineEnd));
        if (close && close[1]![0] === leaf.marker[0] && close[1]!.length >= leaf.marker.length) {
          this.finishFence(leaf, this.lineEnd);
          this.noteQuoteLine();
          return true;
        }
      }
      this.noteQuoteLine();
      return true;
    }
    if (leaf.kind === "html") {
      if (blank && leaf.type >= 6) {
        this.closeLeaf();
        this.noteQuoteLine();
        return true;
      }
      this.htmlLine(leaf);
      return true;
    }
    // Indented code.
    if (first - this.offset >= 4) {
      leaf.lastEnd = this.lineEnd;
      this.noteQuoteLine();
      return true;
    }
    if (blank) {
      this.noteQuoteLine();
      return true;
    }
    return false;
  }

  private htmlLine(html: Extract<Leaf, { kind: "html" }>): void {
    html.lines.push({ from: this.offset, to: this.lineEnd });
    this.noteQuoteLine();
    if (html.type <= 5 && HTML_BLOCK_END[html.type - 1]!.test(this.source.slice(this.offset, this.lineEnd))) {
      this.finishHtml(html);
    }
  }

  private htmlBlockType(rest: string, interrupting: boolean): number {
    for (let index = 0; index < HTML_BLOCK_START.length; index++) {
      if (HTML_BLOCK_START[index]!.test(rest)) return index + 1;
    }
    if (!interrupting && HTML_BLOCK_7.test(rest)) {
      if (/^<\/?(?:script|pre|style|textarea)(?:[ \t\n/>]|$)/i.test(rest)) unsure();
      return 7;
    }
    return 0;
  }

  private listItem(
    first: number,
    rest: string,
    interrupt: boolean | undefined,
  ): { markerLength: number; padding: number } | undefined {
    let markerLength: number;
    if (BULLET.test(rest)) markerLength = 1;
    else {
      const ordered = ORDERED.exec(rest);
      if (!ordered) return undefined;
      if (ordered[1] !== "1") {
        if (interrupt === undefined) unsure();
        if (interrupt) return undefined;
      }
      markerLength = ordered[0].length;
    }
    const after = first + markerLength;
    if (after < this.lineEnd && this.source.charCodeAt(after) !== 0x20) return undefined;
    const content = this.nonspace(after);
    // An item that begins with a blank line: not read here.
    if (content === this.lineEnd) {
      if (interrupt === true) return undefined;
      unsure();
    }
    const spaces = content - after;
    return { markerLength, padding: spaces >= 5 ? markerLength + 1 : markerLength + spaces };
  }

  /** Before a new block: containers not matched close, and so does the open leaf. */
  private startContainer(matched: number): void {
    this.closeLeaf();
    this.closeContainers(matched);
  }

  /**
   * The line was read inside every open container (its markers are all on it): a quote
   * ends no earlier than the end of its last line, blank or not.
   */
  private noteQuoteLine(): void {
    for (const container of this.open) {
      container.hasContent = true;
      if (container.kind === "quote" && this.lineEnd > container.end) container.end = this.lineEnd;
    }
  }

  private closeContainers(keep: number): void {
    while (this.open.length > keep) {
      const container = this.open.pop()!;
      if (!container.hasContent) unsure();
      if (container.topLevel) {
        this.blocks.splice(this.insertAt(container.start), 0, {
          type: container.kind === "quote" ? "blockquote" : "list-item",
          start: container.start,
          end: container.end,
        });
      }
      const parent = this.open[this.open.length - 1];
      if (parent && container.end > parent.end) parent.end = container.end;
    }
  }

  /** Where a top-level container's block goes: before the blocks found inside it. */
  private insertAt(start: number): number {
    let index = this.blocks.length;
    while (index > 0 && this.blocks[index - 1]!.start >= start) index--;
    return index;
  }

  private get topLevel(): boolean {
    return this.open.length === 0;
  }

  private push(block: MarkdownBlock): void {
    if (this.topLevel || block.type === "heading") this.blocks.push(block);
    this.extend(block.end);
  }

  private extend(end: number): void {
    for (const container of this.open) if (end > container.end) container.end = end;
  }

  private closeLeaf(): void {
    const leaf = this.leaf;
    if (leaf === undefined) return;
    this.leaf = undefined;
    switch (leaf.kind) {
      case "paragraph": {
        const end = leaf.lines[leaf.lines.length - 1]!.to;
        if (this.source.charCodeAt(leaf.start) === 0x5b) {
          const text = this.source.slice(leaf.start, end);
          if (text.includes("]:") && !NOT_A_DEFINITION.test(text)) unsure();
        }
        this.push({ type: "paragraph", start: leaf.start, end });
        this.inline(leaf.lines, true);
        return;
      }
      case "fence":
        // A fence still open when its container or the text ends: not read here.
        unsure();
        return;
      case "indented":
        this.spans.push({ kind: "fence", start: leaf.start, end: leaf.lastEnd, value: "" });
        if (this.topLevel) this.blocks.push({ type: "code", start: leaf.start, end: leaf.lastEnd, lang: "" });
        this.extend(leaf.lastEnd);
        return;
      case "html": {
        // Kinds 1–5 end at their marker; one still open here is not read.
        if (leaf.type <= 5) unsure();
        this.finishHtml(leaf);
        return;
      }
    }
  }

  private finishFence(leaf: Extract<Leaf, { kind: "fence" }>, end: number): void {
    this.leaf = undefined;
    this.spans.push({ kind: "fence", start: leaf.start, end, value: leaf.lang });
    if (this.topLevel) this.blocks.push({ type: "code", start: leaf.start, end, lang: leaf.lang });
    this.extend(end);
  }

  private finishHtml(leaf: Extract<Leaf, { kind: "html" }>): void {
    this.leaf = undefined;
    const end = leaf.lines[leaf.lines.length - 1]!.to;
    const value = leaf.lines.map((line) => this.source.slice(line.from, line.to)).join("\n");
    this.spans.push({ kind: "html", start: leaf.start, end, value });
    if (this.topLevel) this.blocks.push({ type: "html", start: leaf.start, end });
    this.extend(end);
  }

  private heading(start: number, depth: number, contentStart: number): void {
    const end = this.lineEnd;
    this.push({ type: "heading", start, end, depth });
    let contentEnd = end;
    while (contentEnd > contentStart && this.source.charCodeAt(contentEnd - 1) === 0x20) contentEnd--;
    let closing = contentEnd;
    while (closing > contentStart && this.source.charCodeAt(closing - 1) === 0x23) closing--;
    if (closing < contentEnd && (closing === contentStart || this.source.charCodeAt(closing - 1) === 0x20)) {
      contentEnd = closing;
      while (contentEnd > contentStart && this.source.charCodeAt(contentEnd - 1) === 0x20) contentEnd--;
    }
    if (contentEnd > contentStart)
      this.inline([{ from: contentStart, to: contentEnd, prefix: contentStart }]);
  }

  private setextHeading(paragraph: Extract<Leaf, { kind: "paragraph" }>, depth: number): void {
    if (this.source.charCodeAt(paragraph.start) === 0x5b) unsure();
    this.push({ type: "heading", start: paragraph.start, end: this.lineEnd, depth });
    this.inline(paragraph.lines);
  }

  /**
   * A paragraph holding a link, read by the full parser. Only a top-level one: there the
   * paragraph's source is exactly its text, so it parses alone as it does in place.
   */
  private paragraphWithLink(lines: readonly InlineLine[], paragraph: boolean): void {
    if (!paragraph || !this.topLevel || this.parseParagraph === undefined) unsure();
    const start = lines[0]!.from;
    const end = lines[lines.length - 1]!.to;
    const parsed = this.parseParagraph(this.source.slice(start, end));
    const first = parsed.blocks[0];
    if (first?.type !== "paragraph" || first.start !== 0 || first.end !== end - start) unsure();
    for (const block of parsed.blocks.slice(1)) {
      if (block.type !== "html") unsure();
      this.blocks.push({ ...block, start: block.start + start, end: block.end + start });
    }
    for (const span of parsed.spans) {
      this.spans.push({ ...span, start: span.start + start, end: span.end + start });
    }
  }

  private mayHoldSpans(lines: readonly InlineLine[]): boolean {
    const source = this.source;
    for (const line of lines) {
      for (let at = line.from; at < line.to; at++) {
        const code = source.charCodeAt(at);
        if (code === 0x60 || code === 0x3c || code === 0x5d) return true;
      }
    }
    return false;
  }

  /** Offset in the source of a point of the inline text the lines make, joined by newlines. */
  private toSource(lines: readonly InlineLine[], at: number): number {
    let base = 0;
    for (const line of lines) {
      const length = line.to - line.from;
      if (at <= base + length) return line.from + (at - base);
      base += length + 1;
    }
    return unsure();
  }

  /**
   * The source between two points of the inline text, as the parser gives a code span's
   * value over lines: each further line from where its container prefixes end.
   */
  private sourceBetween(lines: readonly InlineLine[], from: number, to: number): string {
    const parts: string[] = [];
    let base = 0;
    for (const line of lines) {
      const length = line.to - line.from;
      const lineEnd = base + length;
      if (lineEnd >= from && base <= to) {
        const start = from >= base ? line.from + (from - base) : line.prefix;
        const end = to <= lineEnd ? line.from + (to - base) : line.to;
        parts.push(this.source.slice(start, end));
      }
      base = lineEnd + 1;
    }
    return parts.join("\n");
  }

  /** Code spans and inline HTML of inline text given as line pieces of the source. */
  private inline(lines: readonly InlineLine[], paragraph = false): void {
    // Most lines hold no backtick, `<` or `]`: nothing to find in them.
    if (!this.mayHoldSpans(lines)) return;
    const text =
      lines.length === 1
        ? this.source.slice(lines[0]!.from, lines[0]!.to)
        : lines.map((line) => this.source.slice(line.from, line.to)).join("\n");
    if (text.includes("](") && !plainLinksOnly(text)) {
      this.paragraphWithLink(lines, paragraph);
      return;
    }
    const topLevel = this.topLevel;
    let at = 0;
    while (at < text.length) {
      // Only a backslash, a backtick or `<` starts anything read here.
      INLINE_START.lastIndex = at;
      if (!INLINE_START.test(text)) break;
      at = INLINE_START.lastIndex - 1;
      const code = text.charCodeAt(at);
      if (code === 0x5c) {
        at += at + 1 < text.length && ASCII_PUNCTUATION.test(text[at + 1]!) ? 2 : 1;
        continue;
      }
      if (code === 0x60) {
        let runEnd = at;
        while (text.charCodeAt(runEnd) === 0x60) runEnd++;
        const length = runEnd - at;
        let search = runEnd;
        let closer = -1;
        for (;;) {
          const next = text.indexOf("`", search);
          if (next === -1) break;
          let nextEnd = next;
          while (text.charCodeAt(nextEnd) === 0x60) nextEnd++;
          if (nextEnd - next === length) {
            closer = next;
            break;
          }
          search = nextEnd;
        }
        if (closer === -1) {
          at = runEnd;
          continue;
        }
        let value = text.slice(runEnd, closer);
        if (value.includes("\n")) value = this.sourceBetween(lines, runEnd, closer);
        if (value.length > 2 && /^[ \n]/.test(value) && /[ \n]$/.test(value) && /[^ \n]/.test(value)) {
          value = value.slice(1, -1);
        }
        this.spans.push({
          kind: "inline-code",
          start: this.toSource(lines, at),
          end: this.toSource(lines, closer + length),
          value,
        });
        at = closer + length;
        continue;
      }
      if (code === 0x3c) {
        AUTOLINK.lastIndex = at;
        const link = AUTOLINK.exec(text);
        if (link) {
          at += link[0].length;
          continue;
        }
        INLINE_HTML.lastIndex = at;
        const html = INLINE_HTML.exec(text);
        if (html) {
          if (html[0].includes("\n")) unsure();
          const start = this.toSource(lines, at);
          const end = start + html[0].length;
          this.spans.push({ kind: "html", start, end, value: html[0] });
          if (topLevel) this.blocks.push({ type: "html", start, end });
          at += html[0].length;
          continue;
        }
      }
      at++;
    }
  }
}
