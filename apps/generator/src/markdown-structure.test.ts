import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fixtureSources } from "./__fixtures__/fixtures";
import { parseMarkdownStructure, parseWhole } from "./markdown-structure";
import { findRealCorpus } from "./real-corpus.test-support";

/** Pieces chosen to straddle the cuts: headings inside fences, HTML blocks, lists, quotes. */
const pieces = [
  "## Heading\n",
  "# Top\n",
  "Some prose with `inline code` and `AskUserQuestion`.\n",
  "A paragraph\nthat continues\n",
  "```bash\n## not a heading\necho `x`\n```\n",
  "~~~\n# also not a heading\n~~~\n",
  "````md\n```\n## inside\n```\n````\n",
  "```\nunclosed fence\n## still code\n",
  "<!--\n## in a comment\n-->\n",
  "<!-- one line -->\n",
  "<pre>\n## preformatted\n</pre>\n",
  "<div>\nhtml block\n</div>\n",
  "- item one\n- item `two`\n  continued\n",
  "1. first\n\n   ```sh\n   git status\n   ```\n",
  "> quoted `code`\n> more\n",
  "    indented code\n",
  "Setext heading\n---\n",
  "***\n",
  "``` inline ` backtick fence\n",
  "- item\n<div>\n",
  "text\n<span>\n",
  "> ```\n> code\n",
  "  ```\n## in an indented fence\n  ```\n",
  "- outer\n  - inner\n\n        ```\n        deep\n",
  "[ref]: https://example.com\n",
  "<https://example.com> and \\`escaped\\`\n",
  "| a | `b` |\n|---|---|\n",
  "#hashtag is not a heading\n",
  "\n",
];

const sameAsWhole = (markdown: string) =>
  expect(parseMarkdownStructure(markdown)).toEqual(parseWhole(markdown));

describe("parseMarkdownStructure, section by section", () => {
  it("gives exactly what one parse of the whole document gives", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...pieces), { minLength: 1, maxLength: 25 }), (chosen) => {
        sameAsWhole(chosen.join(""));
        sameAsWhole(chosen.join("\n"));
      }),
      { numRuns: 400 },
    );
  });

  it("gives the same for every fixture skill and, when present, every real gstack skill", () => {
    for (const source of fixtureSources()) sameAsWhole(source.source);
    const corpus = findRealCorpus();
    if (corpus === undefined) return;
    for (const entry of readdirSync(corpus, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      try {
        sameAsWhole(readFileSync(join(corpus, entry.name, "SKILL.md"), "utf8"));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
    }
  });
});
