import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  boundedString,
  codePointLength,
  GIT_REF_START_PATTERN,
  NO_NUL_PATTERN,
  SAFE_LINE_PATTERN,
  SAFE_TEXT_PATTERN,
  SKILL_NAME_PATTERN,
  VISIBLE_TEXT_PATTERN,
} from "./common";

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

describe("the patterns the schemas share", () => {
  const patterns = {
    SAFE_TEXT_PATTERN,
    SAFE_LINE_PATTERN,
    VISIBLE_TEXT_PATTERN,
    NO_NUL_PATTERN,
    GIT_REF_START_PATTERN,
    SKILL_NAME_PATTERN,
  };
  // Strings of single units, surrogate pairs, lone surrogates and the characters the rules name.
  const text = fc.string({
    unit: fc.oneof(
      fc.string({ unit: "binary", minLength: 1, maxLength: 1 }),
      fc.constantFrom("\u0000", "\u001b", "\u0085", "\u200d", "\u200f", "\u202e", "\u2066", "-", ".", "/"),
    ),
    maxLength: 140,
  });

  it.each(Object.entries(patterns))(
    "%s means the same read by UTF-16 units (zod) and by code points (JSON Schema validators)",
    (_name, pattern) => {
      const byCodePoint = new RegExp(pattern.source, "u");
      fc.assert(
        fc.property(text, (value) => {
          expect(byCodePoint.test(value), JSON.stringify(value)).toBe(pattern.test(value));
        }),
        { numRuns: 2000 },
      );
    },
  );

  it("calls text visible exactly when it has a character that is not white space, a control or a default-ignorable one", () => {
    // A reference made from Unicode's own properties, within the Basic Multilingual Plane.
    const invisible = /^[\p{White_Space}\p{Cc}\p{Default_Ignorable_Code_Point}\u2800]$/u;
    for (let code = 0; code <= 0xffff; code++) {
      if (code >= 0xd800 && code <= 0xdfff) continue;
      const character = String.fromCharCode(code);
      // Unassigned code points Unicode reserves as default-ignorable (U+2065, U+FFF0–U+FFF8) count as invisible too.
      const expected = !invisible.test(character);
      expect(VISIBLE_TEXT_PATTERN.test(character), `U+${code.toString(16).padStart(4, "0")}`).toBe(expected);
      expect(VISIBLE_TEXT_PATTERN.test(`\u200d${character}\u200d`)).toBe(expected);
    }
  });

  it("takes a skill name with a visible character and refuses one without", () => {
    for (const name of ["ship", "plan-ceo-review", "👩‍💻", "a\u200db", " x "])
      expect(SKILL_NAME_PATTERN.test(name), name).toBe(true);
    for (const name of [
      "",
      "\u200d",
      "   ",
      "\u200e\u200f",
      "\ufeff",
      "\u3164",
      ".",
      "..",
      "a/b",
      "a\nb",
      "a\u200fb",
    ])
      expect(SKILL_NAME_PATTERN.test(name), JSON.stringify(name)).toBe(false);
  });
});
