import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseAuthoredLearning } from "./authored-learning";
import { splitMarkdownBlocks } from "./markdown-blocks";

const types = [
  "pattern",
  "pitfall",
  "preference",
  "architecture",
  "tool",
  "operational",
  "investigation",
] as const;
const word = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9 .,;'()`é漢😀-]{0,30}[A-Za-z0-9.)]$/u);

function parse(markdown: string) {
  const [block] = splitMarkdownBlocks(markdown);
  return parseAuthoredLearning(block!.title, block!.lines);
}

describe("parseAuthoredLearning", () => {
  it("reads back what the documented form says, whichever optional lines are present", () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            type: fc.constantFrom(...types),
            key: fc.stringMatching(/^[a-zA-Z0-9_-]{1,30}$/),
            insight: fc.array(word, { minLength: 1, maxLength: 4 }).map((lines) => lines.join("\n")),
            confidence: fc.integer({ min: 1, max: 10 }),
            files: fc.array(fc.stringMatching(/^[a-z0-9_./-]{1,20}$/), { minLength: 1, maxLength: 3 }),
            source: fc.constantFrom("observed", "user-stated", "inferred", "cross-model"),
            project: fc.stringMatching(/^[a-z0-9][a-z0-9._-]{0,20}$/),
          },
          { requiredKeys: ["type", "key", "insight"] },
        ),
        fc.boolean(),
        (learning, quoted) => {
          const body = quoted ? learning.insight.replace(/^/gm, "> ") : learning.insight;
          const lines = [`## Learning: ${learning.type}/${learning.key}`, body, ""];
          if (learning.project !== undefined) lines.push(`- project: ${learning.project}`);
          if (learning.confidence !== undefined) lines.push(`- confidence: ${learning.confidence}`);
          if (learning.files !== undefined) lines.push(`- files: ${learning.files.join(", ")}`);
          if (learning.source !== undefined) lines.push(`- Source: ${learning.source}`);
          const result = parse(lines.join("\n"));
          expect(result).toEqual({
            ok: true,
            learning: {
              skill: undefined,
              confidence: undefined,
              files: undefined,
              source: undefined,
              project: undefined,
              ...learning,
            },
          });
        },
      ),
    );
  });

  it("accepts the loose forms an agent writes", () => {
    const result = parse(
      "### learning pitfalls `use-vitest` <!-- importance: 9 -->\nvitest, not jest   \n\n* **Files**: `a.ts`",
    );
    expect(result).toEqual({
      ok: true,
      learning: {
        type: "pitfall",
        key: "use-vitest",
        insight: "vitest, not jest",
        confidence: 9,
        files: ["a.ts"],
        source: undefined,
        skill: undefined,
        project: undefined,
      },
    });
  });

  it.each([
    ["## Learning: pitfall/has space\nx", "heading must read"],
    ["## Learning Spanish\nhola", undefined],
    ["## Learning: pitfall/k\nx\n- confidence: 11", "confidence must be a whole number from 1 to 10"],
    ["## Learning: pitfall/k\nx\n- source: rumour", "source must be one of"],
    ["## Learning: pitfall/k\nx\n- project: ../etc", 'project "../etc" is not a gstack project slug'],
    ["## Learning: idea/k\nx", 'unknown learning type "idea"'],
  ])("rejects %j with a reason", (markdown, reason) => {
    const result = parse(markdown);
    if (reason === undefined) expect(result).toBeUndefined();
    else expect(result).toEqual({ ok: false, reason: expect.stringContaining(reason) });
  });
});
