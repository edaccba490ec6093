import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { boundedString, codePointLength } from "./common";

describe("codePointLength", () => {
  it("counts as the string iterator does, lone surrogates included", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), (text) => {
        expect(codePointLength(text)).toBe([...text].length);
      }),
      { numRuns: 500 },
    );
  });

  it("counts pairs once and halves of pairs alone as one", () => {
    expect(codePointLength("🔐🔐")).toBe(2);
    expect(codePointLength("\ud83d")).toBe(1);
    expect(codePointLength("\udd10\ud83d\udd10")).toBe(2);
    expect(codePointLength("\ud83d\ud83d\udd10")).toBe(2);
  });
});

describe("boundedString", () => {
  it("accepts exactly the strings of at most the bound in code points", () => {
    const schema = boundedString(5);
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 12 }), (text) => {
        expect(schema.safeParse(text).success).toBe([...text].length <= 5);
      }),
      { numRuns: 500 },
    );
  });
});
