import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { LearningEntry } from "./learning-entry";
import { eachMarkdownSpan, spanLines, withoutByteOrderMark } from "./markdown-blocks";
import {
  parseMemoryFile,
  parseMemoryFileByLines,
  renderMemoryFile,
  renderMemoryFileBytes,
} from "./memory-file";
import {
  escapeJsonForComment,
  findDataLine,
  importanceOf,
  insightFitsBody,
  isLearningTitle,
  isUneditedSection,
  isUneditedSpan,
  parseLearningTitle,
  parseLearningTitleLeniently,
  quoteLines,
  renderSection,
} from "./memory-section";

const types = [
  "pattern",
  "pitfall",
  "preference",
  "architecture",
  "tool",
  "operational",
  "investigation",
] as const;

const nasty = fc.constantFrom(
  "",
  "\n",
  "-->",
  "<!-- x -->",
  "--!>",
  "<!--",
  "```",
  "~~~\n# heading in fence\n~~~",
  "## Learning: pitfall/fake\n> quoted",
  '<!-- gstack-learning {"v":1} -->',
  "<!-- importance: 10 -->",
  "> already quoted",
  ">",
  "line with trailing space ",
  "\r\n",
  "\u2028\u2029",
  "\ufeffbom",
  "\ud800 lone",
  "\udc00",
  "zero\u200bwidth\u202eoverride",
  "\u0000\u001f\u007f",
  "- confidence: 3",
  "__proto__",
  "x".repeat(20_000),
  "😀 emoji 𝒳 and ﷽",
);

const text = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: "binary" }) },
  { weight: 3, arbitrary: fc.string({ unit: "grapheme" }) },
  { weight: 2, arbitrary: nasty },
  {
    weight: 2,
    arbitrary: fc
      .array(fc.oneof(nasty, fc.string({ unit: "binary" })), { maxLength: 6 })
      .map((parts) => parts.join("\n")),
  },
);

/** Builds entries as JSON text so field order, `__proto__` and unknown fields are as arbitrary as in a real file. */
const entry: fc.Arbitrary<LearningEntry> = fc
  .record(
    {
      skill: text,
      type: fc.constantFrom(...types),
      key: fc.stringMatching(/^[a-zA-Z0-9_-]{1,40}$/),
      insight: text,
      confidence: fc.integer({ min: 1, max: 10 }),
      source: fc.constantFrom("observed", "user-stated", "inferred", "cross-model"),
      files: fc.array(text, { maxLength: 3 }),
      ts: fc.date({ noInvalidDate: true }).map((date) => date.toISOString()),
      trusted: fc.boolean(),
      origin: text,
    },
    { requiredKeys: ["type", "key", "insight"] },
  )
  .chain((known) =>
    fc
      .tuple(
        fc.array(fc.tuple(fc.oneof(text, fc.constant("__proto__")), fc.jsonValue()), { maxLength: 4 }),
        fc.func(fc.integer()),
      )
      .map(([extra, order]) => {
        const pairs: [string, unknown][] = [...Object.entries(known), ...extra];
        const seen = new Set<string>();
        const unique = pairs.filter(([name]) => {
          if (seen.has(name)) return false;
          seen.add(name);
          return true;
        });
        unique.sort((left, right) => order(left[0]) - order(right[0]));
        const json = `{${unique.map(([name, value]) => `${JSON.stringify(name)}:${JSON.stringify(value)}`).join(",")}}`;
        return JSON.parse(json) as LearningEntry;
      }),
  );

/** What a file on disk gives back: UTF-8 cannot hold lone surrogates, so write and read the bytes. */
function throughDisk(markdown: string): string {
  return Buffer.from(markdown, "utf8").toString("utf8");
}

describe("memory file encoding", () => {
  it("gives back exactly the entries it was given, key order included, for any content", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 6 }), (entries) => {
        const unique = [...new Map(entries.map((item) => [`${item.key}|${item.type}`, item])).values()];
        const markdown = throughDisk(renderMemoryFile("acme-widget", unique));
        const parsed = parseMemoryFile(markdown);
        expect(parsed.problems).toEqual([]);
        expect(parsed.authored).toEqual([]);
        expect(parsed.other).toEqual([]);
        expect(parsed.generated.every((section) => !section.edited)).toBe(true);
        const back = new Map(
          parsed.generated.map((section) => [`${section.entry.key}|${section.entry.type}`, section.entry]),
        );
        expect(back.size).toBe(unique.length);
        for (const original of unique) {
          const recovered = back.get(`${original.key}|${original.type}`);
          expect(JSON.stringify(recovered)).toBe(JSON.stringify(original));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("is stable: rendering what was parsed gives the same bytes", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 4 }), (entries) => {
        const unique = [...new Map(entries.map((item) => [`${item.key}|${item.type}`, item])).values()];
        const first = renderMemoryFile("p", unique);
        const again = renderMemoryFile(
          "p",
          parseMemoryFile(throughDisk(first)).generated.map((section) => section.entry),
        );
        expect(again).toBe(throughDisk(first));
      }),
      { numRuns: 100 },
    );
  });

  it("never lets a value close the data comment or open a new section", () => {
    fc.assert(
      fc.property(entry, (item) => {
        const markdown = renderMemoryFile("p", [item]);
        const lines = markdown.split("\n");
        const dataLines = lines.filter((line) => line.startsWith("<!-- gstack-learning "));
        expect(dataLines).toHaveLength(1);
        expect(dataLines[0]!.indexOf("-->")).toBe(dataLines[0]!.length - 3);
        expect(lines.filter((line) => line.startsWith("## "))).toHaveLength(1);
      }),
    );
  });

  it("with editedOnly, leaves out exactly the sections that were not edited", () => {
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 5 }),
        fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
        (entries, edits) => {
          const unique = [...new Map(entries.map((item) => [`${item.key}|${item.type}`, item])).values()];
          let markdown = renderMemoryFile("p", unique);
          const sections = markdown.split("\n## ");
          markdown = sections
            .map((section, index) =>
              index > 0 && edits[index - 1] ? section.replace("\n>", "\n> edited:") : section,
            )
            .join("\n## ");
          const full = parseMemoryFile(throughDisk(markdown));
          const editedOnly = parseMemoryFile(throughDisk(markdown), { editedOnly: true });
          expect(editedOnly.generated).toEqual(full.generated.filter((section) => section.edited));
        },
      ),
      { numRuns: 200 },
    );
  });

  it("reads a person's edit of a quoted insight as an edit", () => {
    const original = {
      type: "pitfall",
      key: "runner",
      insight: "Tests use jest.",
      confidence: 6,
    } as LearningEntry;
    const markdown = renderMemoryFile("p", [original]).replace(
      "> Tests use jest.",
      "> Tests use vitest.\n> Not jest.",
    );
    const [section] = parseMemoryFile(markdown).generated;
    expect(section?.edited).toBe(true);
    expect(section?.entry).toEqual({ ...original, insight: "Tests use vitest.\nNot jest." });
  });

  it("survives Windows line endings and trailing-space stripping without seeing an edit", () => {
    const original = {
      type: "tool",
      key: "bun",
      insight: "Use bun\n\nfor scripts",
      ts: "2026-11-01T00:00:00Z",
    } as LearningEntry;
    const markdown = renderMemoryFile("p", [original]).replaceAll("\n", "\r\n");
    const [section] = parseMemoryFile(markdown).generated;
    expect(section).toMatchObject({ line: 5, entry: original, edited: false });
  });

  it("keeps hand-written text and reports broken learning sections with their line", () => {
    const markdown = [
      "# Notes",
      "Call the dentist.",
      "",
      "## Learning: pitfal/typo-type",
      "Something.",
      "",
      "## Learning: pitfall/good-one <!-- importance: 8 -->",
      "> Prefer `pnpm -r`.",
      "",
      "- files: `package.json`, turbo.json",
      "- project: acme-widget",
    ].join("\n");
    const parsed = parseMemoryFile(markdown);
    expect(parsed.other).toEqual([{ line: 1, text: "# Notes\nCall the dentist." }]);
    expect(parsed.problems).toMatchObject([
      { line: 4, message: expect.stringContaining('unknown learning type "pitfal"') },
    ]);
    expect(parsed.authored).toMatchObject([
      {
        line: 7,
        learning: {
          type: "pitfall",
          key: "good-one",
          insight: "Prefer `pnpm -r`.",
          confidence: 8,
          files: ["package.json", "turbo.json"],
          project: "acme-widget",
        },
      },
    ]);
  });
});

describe("parseLearningTitle", () => {
  it("reads the heading this package writes as the lenient pattern does", () => {
    const piece = fc.constantFrom(
      "Learning: ",
      "learning:",
      "tool",
      "Tool",
      "/",
      "key-1",
      "x",
      " ",
      "<!-- importance: ",
      "7",
      "10",
      " -->",
      "`",
      "\t",
    );
    const written = fc
      .tuple(fc.stringMatching(/^[a-z]{1,8}$/), fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/), fc.nat(99))
      .map(([type, key, importance]) => `Learning: ${type}/${key} <!-- importance: ${importance} -->`);
    fc.assert(
      fc.property(
        fc.oneof(
          written,
          fc.array(piece, { maxLength: 8 }).map((parts) => parts.join("")),
        ),
        (title) => {
          expect(parseLearningTitle(title)).toEqual(parseLearningTitleLeniently(title));
          expect(isLearningTitle(title)).toBe(parseLearningTitle(title) !== undefined);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe("renderMemoryFileBytes", () => {
  it("gives the bytes of renderMemoryFile and where its sections start and end", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(entry, { selector: (item) => `${item.key}|${item.type}`, maxLength: 8 }),
        fc.array(fc.constantFrom("## Notes\nkept as is", "plain text\n\n"), { maxLength: 2 }),
        (entries, keep) => {
          const rendered = renderMemoryFileBytes("acme", entries, keep);
          const text = renderMemoryFile("acme", entries, keep);
          expect(rendered.bytes.equals(Buffer.from(text, "utf8"))).toBe(true);
          const sections = rendered.bytes.toString("utf8", rendered.sectionsStart, rendered.sectionsEnd);
          expect(sections).toBe(renderMemoryFile("acme", entries).slice(renderMemoryFile("acme", []).length));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("renderMemoryFileBytes over many chunks", () => {
  it("gives the bytes of renderMemoryFile when the sections outgrow the first estimate", () => {
    // Short sections first, so the size guessed from the first chunk is far too small, then
    // long ones (one larger than every chunk), multi-byte characters and kept blocks.
    const entries: LearningEntry[] = [];
    for (let index = 0; index < 3000; index++) {
      const insight = index < 1000 ? `a${index}` : `é ${"x".repeat(index % 400)} 😀 ${index}`;
      entries.push({ type: "pattern", key: `k${String(index).padStart(5, "0")}`, insight } as LearningEntry);
    }
    entries.push({ type: "tool", key: "huge", insight: "y".repeat(300_000) } as LearningEntry);
    entries.push({ type: "tool", key: "wide", insight: "€".repeat(400_000) } as LearningEntry);
    entries.push({ type: "tool", key: "zz", insight: "\ud800 lone, <b>" } as LearningEntry);
    const keep = ["## Notes\nkept as is", `## Long\n${"z".repeat(100_000)}`];
    const rendered = renderMemoryFileBytes("acme", entries, keep);
    expect(rendered.bytes.equals(Buffer.from(renderMemoryFile("acme", entries, keep), "utf8"))).toBe(true);
    expect(rendered.bytes.toString("utf8", rendered.sectionsStart, rendered.sectionsEnd)).toBe(
      renderMemoryFile("acme", entries).slice(renderMemoryFile("acme", []).length),
    );
  });
});

describe("parseMemoryFile with editedOnly", () => {
  const line = fc.constantFrom(
    "",
    " ",
    ">",
    "> ",
    "> edited",
    "x",
    "```",
    "~~~",
    "## Learning: tool/other <!-- importance: 5 -->",
    "## Notes",
    '<!-- gstack-learning {"v":1,"body":"0123456789abcdef","entry":{}} -->',
    '<!-- gstack-learning {"v":1,"entry":{"type":"tool","key":"k","insight":"i"}} -->',
    "<!-- gstack-learning {} -->",
    "<!-- gstack-learning {",
    "} -->",
    "- confidence: 3",
    "\r",
  );
  const change = fc.tuple(fc.nat(), fc.constantFrom("replace", "insert", "delete", "append"), line);

  /** A rendered file with some of its lines replaced, added or taken out. */
  const changedFile = fc
    .tuple(
      fc.uniqueArray(entry, { selector: (item) => `${item.key}|${item.type}`, maxLength: 5 }),
      fc.array(change, { maxLength: 4 }),
      fc.boolean(),
    )
    .map(([entries, changes, windows]) => {
      const lines = throughDisk(renderMemoryFile("p", entries)).split("\n");
      for (const [at, kind, text] of changes) {
        const index = at % (lines.length + 1);
        if (kind === "replace" && index < lines.length) lines[index] = text;
        else if (kind === "delete") lines.splice(index, 1);
        else if (kind === "append") lines[index] = `${lines[index] ?? ""}${text}`;
        else lines.splice(index, 0, text);
      }
      const markdown = lines.join("\n");
      return windows ? markdown.replaceAll("\n", "\r\n") : markdown;
    });

  it("reads what reading every block's lines reads, rendered, edited and damaged sections alike", () => {
    fc.assert(
      fc.property(changedFile, (markdown) => {
        expect(parseMemoryFile(markdown, { editedOnly: true })).toEqual(
          parseMemoryFileByLines(markdown, true),
        );
      }),
      { numRuns: 3000 },
    );
  });

  it("takes a section as unedited without its lines only when its lines say so", () => {
    fc.assert(
      fc.property(changedFile, (markdown) => {
        const source = withoutByteOrderMark(markdown);
        for (const span of eachMarkdownSpan(markdown)) {
          if (!isUneditedSpan(source, span.start, span.end)) continue;
          const lines = spanLines(source, span);
          const dataIndex = findDataLine(lines);
          expect(dataIndex).not.toBe(-1);
          expect(isUneditedSection(lines, dataIndex)).toBe(true);
        }
      }),
      { numRuns: 3000 },
    );
  });

  it("reads a section whose last line is not its data comment by its lines", () => {
    const original = { type: "tool", key: "k", insight: "Use pnpm." } as LearningEntry;
    const rendered = renderMemoryFile("p", [original]);
    const trailing = `${rendered}note under the section\n`;
    const source = withoutByteOrderMark(trailing);
    const spans = [...eachMarkdownSpan(trailing)];
    expect(isUneditedSpan(source, spans[1]!.start, spans[1]!.end)).toBe(false);
    expect(parseMemoryFile(trailing, { editedOnly: true })).toEqual(parseMemoryFileByLines(trailing, true));
    const damaged = rendered.replace("} -->\n", "}\n");
    expect(parseMemoryFile(damaged, { editedOnly: true })).toEqual(parseMemoryFileByLines(damaged, true));
    expect(parseMemoryFile(damaged, { editedOnly: true }).other).toHaveLength(0);
    for (const [from, to] of [
      ['","entry":{', '","entry": {'],
      ['{"v":1,"body"', '{"v":2,"body"'],
      ['"body":"', '"body":"0'],
    ]) {
      const changed = rendered.replace(from!, to!);
      const changedSource = withoutByteOrderMark(changed);
      const [, span] = [...eachMarkdownSpan(changed)];
      expect(isUneditedSpan(changedSource, span!.start, span!.end)).toBe(false);
      expect(parseMemoryFile(changed, { editedOnly: true })).toEqual(parseMemoryFileByLines(changed, true));
    }
  });

  it("takes every section it wrote as unedited without its lines", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 5 }), (entries) => {
        const markdown = throughDisk(renderMemoryFile("p", entries));
        const source = withoutByteOrderMark(markdown);
        for (const span of eachMarkdownSpan(markdown)) {
          if (span.heading === undefined || parseLearningTitle(span.title) === undefined) continue;
          const lines = spanLines(source, span);
          const dataIndex = findDataLine(lines);
          const quoted = dataIndex !== -1 && isUneditedSection(lines, dataIndex);
          if (!source.includes("\r")) expect(isUneditedSpan(source, span.start, span.end)).toBe(quoted);
        }
      }),
      { numRuns: 300 },
    );
  });
});

// The section renderer as it was before it was made faster, kept as the reference its output
// must match byte for byte.
const PLAIN_DISPLAY_BEFORE = /^[!-;=?-~]+(?: [!-;=?-~]+)*$/;

function displayBefore(value: unknown, limit = 80): string {
  const raw = String(value);
  if (raw.length <= limit && PLAIN_DISPLAY_BEFORE.test(raw)) return raw;
  const text = raw
    .replace(
      /[\u0000-\u001f\u007f-\u009f\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\ud800-\udfff]/gu,
      " ",
    )
    .replace(/[<>]/g, (character) => (character === "<" ? "‹" : "›"))
    .replace(/\s+/g, " ")
    .trim();
  if (text.length <= limit) return text;
  const characters = Array.from(text);
  return characters.length > limit ? `${characters.slice(0, limit - 1).join("")}…` : text;
}

function insightFitsBodyBefore(insight: string): boolean {
  if (!/^[\t\n\x20-\x7e]*$/.test(insight)) {
    if (/[\ud800-\udfff]|[\r\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\ufeff]/u.test(insight))
      return false;
  }
  return !/[ \t]\n|[ \t]$/.test(insight);
}

function renderSectionBefore(entry: LearningEntry): string {
  const insight = typeof entry.insight === "string" ? entry.insight : "";
  const inBody = typeof entry.insight === "string" && insightFitsBodyBefore(insight);
  const shown = inBody ? insight : displayBefore(insight, 4000);
  const json = JSON.stringify(inBody ? { ...entry, insight: null } : entry);
  const payload = inBody
    ? `{"v":1,"body":"${createHash("sha256").update(insight).digest("hex").slice(0, 16)}","entry":${json}}`
    : `{"v":1,"entry":${json}}`;
  const safePayload = escapeJsonForComment(payload);
  const importance = importanceOf(entry);
  const heading = `## Learning: ${displayBefore(entry.type, 40)}/${displayBefore(entry.key, 120)} <!-- importance: ${importance} -->`;
  const quoted = shown.includes("\n") ? quoteLines(shown).join("\n") : shown === "" ? ">" : `> ${shown}`;
  const parts: string[] = [];
  if (typeof entry.source === "string") parts.push(displayBefore(entry.source));
  parts.push(`confidence ${importance}/10`);
  if (typeof entry.ts === "string") parts.push(displayBefore(entry.ts.slice(0, 10)));
  if (typeof entry.skill === "string" && entry.skill !== "")
    parts.push(`skill ${displayBefore(entry.skill, 40)}`);
  if (Array.isArray(entry.files) && entry.files.length > 0) {
    const shownFiles = entry.files.slice(0, 5).map((file) => displayBefore(file, 60));
    const more = entry.files.length > 5 ? `, +${entry.files.length - 5} more` : "";
    parts.push(`files: ${shownFiles.join(", ")}${more}`);
  }
  return `${heading}\n${quoted}\n\n(${parts.join(" · ")})\n<!-- gstack-learning ${safePayload} -->\n`;
}

describe("renderSection", () => {
  const spaced = fc
    .array(fc.constantFrom("a", " ", "\t", "\n", "<", "é", "\r", "\u2028", "\ud800", "~", "\u007f"), {
      maxLength: 12,
    })
    .map((parts) => parts.join(""));

  it("writes the bytes the renderer before it wrote", () => {
    const shown = fc
      .array(fc.constantFrom("a", "~", "!", " ", "  ", "<", ">", "\t", "é", ";", "=", "?"), { maxLength: 8 })
      .map((parts) => parts.join(""));
    const withFiles = fc
      .tuple(entry, fc.array(fc.oneof(text, shown), { maxLength: 8 }), fc.option(shown))
      .map(([item, files, skill]) => {
        if (files.length > 0) item.files = files;
        if (skill !== null) item.skill = skill;
        return item;
      });
    fc.assert(
      fc.property(withFiles, (item) => {
        expect(renderSection(item)).toBe(renderSectionBefore(item));
      }),
      { numRuns: 3000 },
    );
  });

  it("judges an insight fit to be quoted as the check before it did", () => {
    fc.assert(
      fc.property(fc.oneof(spaced, text), (insight) => {
        expect(insightFitsBody(insight)).toBe(insightFitsBodyBefore(insight));
      }),
      { numRuns: 5000 },
    );
  });

  it("quotes an insight with spaces only between words, and not one with a space before a line's end", () => {
    expect(insightFitsBody("a  b\tc\n d")).toBe(true);
    expect(insightFitsBody("a \nb")).toBe(false);
    expect(insightFitsBody("a\t")).toBe(false);
    expect(insightFitsBody(" ")).toBe(false);
    expect(insightFitsBody("")).toBe(true);
  });
});

describe("text under the title", () => {
  // Lines a person types as notes: no heading, fence or setext underline, which would start a
  // block of their own.
  const noteLine = fc
    .string({
      unit: fc.constantFrom("a", "Z", " ", "-", "*", ">", "`", "é", "😀", "1", ".", "<", "!"),
      maxLength: 20,
    })
    .filter((line) => !/^\s*(#|```|~~~|[=-]+\s*$)/.test(line) && !line.startsWith("<!--"));
  const notes = fc
    .array(noteLine, { minLength: 1, maxLength: 6 })
    .map((lines) =>
      lines
        .join("\n")
        .replace(/^\s*\n/, "")
        .trimEnd(),
    )
    .filter((joined) => joined.trim() !== "" && !/^\s/.test(joined));

  it("reads back where it was written, and a second round writes the same bytes", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(entry, { selector: (item) => `${item.key}|${item.type}`, maxLength: 4 }),
        notes,
        fc.array(fc.constantFrom("## Notes\nkept as is", "# Other\n\nmore"), { maxLength: 2 }),
        (entries, typed, keep) => {
          const text = renderMemoryFile("acme", entries, keep, [typed]);
          const parsed = parseMemoryFile(text);
          expect(parsed.underTitle.map((block) => block.text)).toEqual([typed]);
          expect(parsed.other.map((block) => block.text)).toEqual(keep);
          expect(parsed.generated.map((section) => section.edited)).toEqual(entries.map(() => false));
          const again = renderMemoryFile(
            "acme",
            parsed.generated.map((section) => section.entry),
            parsed.other.map((block) => block.text),
            parsed.underTitle.map((block) => block.text),
          );
          expect(again).toBe(text);
          const bytes = renderMemoryFileBytes("acme", entries, keep, [typed]);
          expect(bytes.bytes.toString("utf8")).toBe(text);
          expect(bytes.bytes.toString("utf8", bytes.sectionsStart, bytes.sectionsEnd)).toBe(
            renderMemoryFile("acme", entries).slice(renderMemoryFile("acme", []).length),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it("takes text before any heading as typed under the title", () => {
    const parsed = parseMemoryFile("\n\nA loose note.\n\n# gstack learnings: acme\n\nUnder the title.\n");
    expect(parsed.underTitle).toEqual([
      { line: 3, text: "A loose note." },
      { line: 7, text: "Under the title." },
    ]);
    expect(parsed.other).toEqual([]);
  });
});
