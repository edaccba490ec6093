import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  eachMarkdownSpan,
  type MarkdownBlock,
  spanLines,
  splitMarkdownBlocks,
  withoutByteOrderMark,
} from "./markdown-blocks";

const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

// The first, array-based version of the splitter, kept as the reference for the streaming one.
function splitByLines(text: string): MarkdownBlock[] {
  const source = text.startsWith("\ufeff") ? text.slice(1) : text;
  const lines = source.split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  const blocks: MarkdownBlock[] = [];
  let current: MarkdownBlock = { line: 1, heading: undefined, level: 0, title: "", lines: [] };
  let fence: string | undefined;
  for (let index = 0; index < lines.length; index++) {
    let line = lines[index]!;
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
      if (current.heading !== undefined || current.lines.length > 0) blocks.push(current);
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
  if (current.heading !== undefined || current.lines.length > 0) blocks.push(current);
  return blocks;
}

describe("splitMarkdownBlocks", () => {
  it("splits as the array-based reference does, line endings, fences and a byte-order mark included", () => {
    const piece = fc.constantFrom(
      "# T",
      "## Learning: tool/a",
      "text",
      "",
      " ",
      "```",
      "~~~~",
      "   ## x",
      "\r",
      "\ufeff",
      "#",
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.constantFrom("\n", "\r\n"), (lines, ending) => {
        const text = lines.join(ending);
        const expected: MarkdownBlock[] = splitByLines(text);
        expect(splitMarkdownBlocks(text)).toEqual(expected);
        expect(splitMarkdownBlocks(`${text}\n`)).toEqual(splitByLines(`${text}\n`));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("eachMarkdownSpan", () => {
  const piece = fc.constantFrom(
    "# T",
    "## Learning: tool/a",
    "text",
    "> quoted",
    "",
    " ",
    "```",
    "~~~~",
    "   ## x",
    "\r",
    "\ufeff",
    "#",
  );

  it("finds the blocks of eachMarkdownBlock, and spanLines gives their lines", () => {
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 12 }),
        fc.constantFrom("\n", "\r\n"),
        fc.boolean(),
        (lines, ending, last) => {
          const text = `${lines.join(ending)}${last ? "\n" : ""}`;
          const source = withoutByteOrderMark(text);
          const spans = [...eachMarkdownSpan(text)].map((span) => {
            const { start, end, ...rest } = span;
            expect(start).toBeLessThanOrEqual(end);
            return { ...rest, lines: spanLines(source, span) };
          });
          expect(spans).toEqual(splitByLines(text));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("ends a block's span after its last line's newline", () => {
    const text = "intro\n## A\nx\n\n## B\ny";
    const spans = [...eachMarkdownSpan(text)];
    expect(spans.map((span) => text.slice(span.start, span.end))).toEqual(["intro\n", "x\n\n", "y"]);
  });
});
