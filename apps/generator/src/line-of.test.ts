import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lineCounter, lineOf } from "./line-of";

describe("lineCounter", () => {
  it("gives the line lineOf gives, for any offset in or beyond the text", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("a", "\n", "é", " "), { maxLength: 60 }).map((parts) => parts.join("")),
        fc.array(fc.integer({ min: -3, max: 70 }), { minLength: 1, maxLength: 10 }),
        (text, offsets) => {
          const lineAt = lineCounter(text);
          for (const offset of offsets) expect(lineAt(offset)).toBe(lineOf(text, offset));
        },
      ),
    );
  });

  it("counts a newline at the offset itself as after it", () => {
    expect(lineCounter("a\nb")(1)).toBe(1);
    expect(lineCounter("a\nb")(2)).toBe(2);
    expect(lineCounter("")(5)).toBe(1);
  });
});
