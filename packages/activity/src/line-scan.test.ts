import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { scanLines } from "./line-scan";

/** The plain, line-by-line rule scanLines must agree with. */
function expected(text: string, needles: string[]) {
  return text
    .split("\n")
    .map((raw, index) => ({ text: raw, line: index + 1 }))
    .filter((item) => item.text.trim() !== "")
    .filter((item) => item.text.includes("\\") || needles.every((needle) => item.text.includes(needle)));
}

describe("scanLines", () => {
  it("yields exactly the lines that could match, with their numbers", () => {
    const piece = fc.constantFrom("ab", "b", "x", "\\", " ", "\n", "\n\n", "abc", '"a"', "bab");
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 40 }).map((parts) => parts.join("")),
        fc.array(fc.constantFrom("ab", "b", "x", "ba"), { maxLength: 3 }),
        (text, needles) => {
          expect([...scanLines(text, needles)]).toEqual(expected(text, needles));
        },
      ),
      { numRuns: 500 },
    );
  });

  it("skips blank lines and counts every line", () => {
    expect([...scanLines('{"a":1}\n\n  \n{"b":2}')]).toEqual([
      { text: '{"a":1}', line: 1 },
      { text: '{"b":2}', line: 4 },
    ]);
    expect([...scanLines('{"p":"x"}\n{"p":"y"}\n{"p":"y\\u0022"}\n', ["y"])]).toEqual([
      { text: '{"p":"y"}', line: 2 },
      { text: '{"p":"y\\u0022"}', line: 3 },
    ]);
  });
});
