import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fixtureSources } from "./__fixtures__/fixtures";
import { clearScanCache, scanMarkdown } from "./markdown-scanner";
import { parseWhole } from "./markdown-structure";
import { findRealCorpus } from "./real-corpus.test-support";

/** Line prefixes: containers and indentation, alone or nested. */
const prefixes = [
  "",
  "",
  "",
  " ",
  "  ",
  "   ",
  "    ",
  "      ",
  "> ",
  ">",
  "- ",
  "* ",
  "+ ",
  "1. ",
  "2) ",
  "10. ",
  "-    ",
  "> - ",
  "- > ",
  "  - ",
  "   > ",
];
/** Line bodies: the block starts and inline forms the rules read, and near misses of them. */
const bodies = [
  "",
  "text",
  "more words here  ",
  "# Heading",
  "## Heading `code` ##",
  "###### six ###",
  "#hashtag",
  "```",
  "```bash",
  "```sh title",
  "~~~",
  "````",
  "``` a ` b",
  "---",
  "***",
  "- - -",
  "===",
  "--- ",
  "`code`",
  "a `span` and ``double ` tick``",
  "open `span",
  "close` span",
  "`` ",
  "\\`escaped\\` `real`",
  "<div>",
  "</div>",
  '<div class="x">',
  "<b>bold</b> text",
  "<span `x`>",
  "<!-- comment -->",
  "<!-- open comment",
  "end -->",
  "<pre>",
  "</pre>",
  "<branch> placeholder",
  "<https://example.com/`x`>",
  'a <a href="`">tag</a>',
  "<?php ?>",
  "<!DOCTYPE html>",
  "1. one",
  "2. two",
  "- item",
  "[label]",
  "[ref]: https://example.com",
  "[ref]: https://example.com trailing words",
  "[date]: [screen] — chose `x`",
  "[a]: b 'title'",
  "[link](https://example.com)",
  "![image](x.png)",
  "see [a `code` link](https://example.com/x) and `after`",
  "[open `code](x) close`",
  "[x](`y`) `z`",
  "[a](<b>) `c`",
  '[a](b "t`") `c`',
  "![alt `code`](i.png) `d`",
  "&amp; `&lt;`",
  "x \\",
];

const line = fc
  .tuple(fc.constantFrom(...prefixes), fc.constantFrom(...bodies))
  .map(([prefix, body]) => prefix + body);
const markdown = fc
  .array(line, { minLength: 1, maxLength: 14 })
  .chain((lines) => fc.constantFrom("", "\n").map((end) => lines.join("\n") + end));

/** The scanner either declines or gives exactly what the full parser gives. */
const agrees = (text: string, withParser = true): boolean => {
  const scanned = withParser ? scanMarkdown(text, parseWhole) : scanMarkdown(text);
  if (scanned === undefined) return false;
  expect(scanned).toEqual(parseWhole(text));
  return true;
};

describe("scanMarkdown", () => {
  it("gives exactly what the full CommonMark parse gives, or nothing", () => {
    let read = 0;
    fc.assert(
      fc.property(markdown, fc.boolean(), (text, withParser) => {
        if (agrees(text, withParser)) read++;
      }),
      { numRuns: 3000 },
    );
    // It must read most such text itself, or it saves nothing.
    expect(read).toBeGreaterThan(600);
  });

  it("reads a section remembered from one text the same in another, whatever comes before it", () => {
    const section = fc
      .array(line, { minLength: 0, maxLength: 8 })
      .map((lines) => ["# Shared", ...lines, "## Next", "text"].join("\n"));
    const before = fc.array(line, { minLength: 1, maxLength: 4 }).map((lines) => lines.join("\n"));
    let reused = 0;
    fc.assert(
      fc.property(before, before, section, (first, second, shared) => {
        clearScanCache();
        if (!agrees(`${first}\n${shared}\n`)) return;
        if (agrees(`${second}\n${shared}\n`)) reused++;
      }),
      { numRuns: 1000 },
    );
    expect(reused).toBeGreaterThan(100);
  });

  it("agrees on the counterexamples found while it was written", () => {
    // Lazy lines that look like HTML, list items the parser reads as interrupting after
    // indented code, indented code on a line that closes a quote, items indented by four.
    const found = [
      '      # Heading\n2) <div class="x">\n',
      "* close` span\n</pre>\n  - \n",
      "   a `span` and ``double ` tick``\n-    1. one\n- > text\n</pre>",
      "  - #hashtag\n</pre>\n``` a ` b",
      "> - ---\n    ![image](x.png)\n      \n",
      "   > <!DOCTYPE html>\n    [label]\n10. ",
      '> <div class="x">\n      ```sh title\n10. ',
      "></div>\n      ```bash\n    \n",
      ">## Heading `code` ##\n    <!-- open comment\n    \n",
      "    ---\n- 2. two\n   --- \n",
      "> - ---\n    ![image](x.png)\n      #hashtag\n",
      "-    close` span\n    - item\n",
      "      2. two\n      \n",
      "    code\n\n2) x",
      "a `b\n   c` d",
      "> a `b\n> c` d",
      "- a `b\nc` d",
    ];
    for (const text of found) agrees(text);
    // Where it does read them, it reads them right.
    expect(agrees("    code\n\n2) x")).toBe(true);
    expect(agrees("> a `b\n> c` d")).toBe(true);
  });

  it("agrees on every fixture skill", () => {
    let read = 0;
    for (const source of fixtureSources()) if (agrees(source.source)) read++;
    expect(read).toBeGreaterThan(fixtureSources().length / 2);
  });

  it("agrees on every Markdown file of the real gstack corpus, and reads nearly all of them", () => {
    const corpus = findRealCorpus();
    if (corpus === undefined) return;
    const files = readdirSync(corpus, { recursive: true, encoding: "utf8" })
      .filter((path) => path.endsWith(".md"))
      .sort();
    let read = 0;
    for (const file of files) {
      // Without the full parser even for paragraphs holding links.
      if (agrees(readFileSync(join(corpus, file), "utf8"), false)) read++;
    }
    expect(files.length).toBeGreaterThan(54);
    expect(read).toBeGreaterThan(files.length * 0.9);
  });
});
