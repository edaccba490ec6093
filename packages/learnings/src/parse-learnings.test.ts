import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseLearnings } from "./parse-learnings";

describe("parseLearnings", () => {
  it("skips a corrupt line with a warning naming file and line, and reads the rest", () => {
    const text = [
      '{"type":"pitfall","key":"a","insight":"one"}',
      '{"type":"pitfall","key":"b","insight":"tw',
      "",
      '{"type":"nonsense","key":"c","insight":"three"}',
      '{"type":"tool","key":"d","insight":"four"}',
    ].join("\n");
    const parsed = parseLearnings(text, "/g/projects/p/learnings.jsonl");
    expect(parsed.entries.map((item) => [item.line, item.entry.key])).toEqual([
      [1, "a"],
      [5, "d"],
    ]);
    expect(parsed.warnings).toMatchObject([
      { file: "/g/projects/p/learnings.jsonl", line: 2, message: expect.stringContaining("not valid JSON") },
      { file: "/g/projects/p/learnings.jsonl", line: 4, message: expect.stringContaining("type") },
    ]);
  });

  it("accepts old lines without the newer fields and keeps unknown fields in their order", () => {
    const line = '{"zeta":[1,{"x":null}],"insight":"old","key":"k","type":"pattern","alpha":"kept"}';
    const [item] = parseLearnings(`${line}\r\n`, "f").entries;
    expect(JSON.stringify(item?.entry)).toBe(line);
  });

  it("gives back every valid line exactly, whatever the unknown fields hold", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            key: fc.stringMatching(/^[a-z0-9_-]{1,10}$/),
            insight: fc.string(),
            extra: fc.jsonValue(),
          }),
          { maxLength: 10 },
        ),
        (rows) => {
          const lines = rows.map((row) => JSON.stringify({ type: "tool", ...row }));
          const parsed = parseLearnings(lines.join("\n"), "f");
          expect(parsed.warnings).toEqual([]);
          expect(parsed.entries.map((item) => JSON.stringify(item.entry))).toEqual(lines);
        },
      ),
    );
  });
});
