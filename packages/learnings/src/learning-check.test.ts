import { learningSchema } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isPlainValidLearning } from "./learning-check";
import { parseLearnings } from "./parse-learnings";

const anyValue = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.double(),
  fc.integer({ min: -3, max: 13 }),
  fc.string({ maxLength: 6 }),
  fc.array(fc.oneof(fc.string({ maxLength: 4 }), fc.integer()), { maxLength: 3 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
);
const field = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 12, arbitrary: good }, { weight: 1, arbitrary: anyValue });
const timestamp = fc.oneof(
  fc
    .date({ min: new Date(0), max: new Date(Date.UTC(2200, 0, 1)), noInvalidDate: true })
    .map((date) => date.toISOString()),
  fc.constantFrom(
    "2026-01-01T00:00:00+02:00",
    "2026-01-01T25:00:00Z",
    "2026-01-01",
    "2026-13-01T00:00:00Z",
    "2026-01-01T00:00:00",
  ),
);
const learningLike = fc.record(
  {
    skill: field(fc.string({ maxLength: 8 })),
    type: field(fc.constantFrom("pattern", "pitfall", "tool", "Tool", "nonsense")),
    key: field(fc.oneof(fc.stringMatching(/^[a-zA-Z0-9_-]{1,8}$/), fc.string({ maxLength: 6 }))),
    insight: field(fc.string({ maxLength: 12 })),
    confidence: field(fc.oneof(fc.integer({ min: 0, max: 11 }), fc.constantFrom(1.5, Number.NaN, -0))),
    source: field(fc.constantFrom("observed", "user-stated", "inferred", "cross-model", "OBSERVED")),
    files: field(fc.array(fc.string({ maxLength: 6 }), { maxLength: 3 })),
    ts: field(timestamp),
    trusted: field(fc.boolean()),
    origin: field(fc.string({ maxLength: 8 })),
    extra: anyValue,
  },
  { requiredKeys: ["type", "key", "insight"] },
);

describe("isPlainValidLearning", () => {
  it("vouches only for values the contracts' schema accepts, and for every plain one it accepts", () => {
    let vouched = 0;
    fc.assert(
      fc.property(fc.oneof(learningLike, anyValue), (value) => {
        const accepted = learningSchema.safeParse(value).success;
        expect(isPlainValidLearning(value)).toBe(accepted);
        if (accepted) vouched++;
      }),
      { numRuns: 3000 },
    );
    expect(vouched).toBeGreaterThan(50);
  });

  it("leaves bad lines to the schema, whose warning names file, line, field and rule", () => {
    const text = [
      '{"type":"tool","key":"a b","insight":"x"}',
      '{"type":"tool","key":"k","insight":"x","confidence":11}',
      '{"type":"tool","key":"k","insight":"x","ts":"yesterday"}',
      '{"type":"tool","key":"k","insight":"x","files":["a",2]}',
      '{"type":"tool","key":"k","insight":"x","ts":"2026-01-01T00:00:00.000Z"}',
    ].join("\n");
    const parsed = parseLearnings(text, "/g/learnings.jsonl");
    expect(parsed.entries.map((item) => item.line)).toEqual([5]);
    expect(parsed.warnings.map((warning) => [warning.file, warning.line, warning.message])).toEqual([
      ["/g/learnings.jsonl", 1, expect.stringMatching(/key .*\[format:regex\]/)],
      ["/g/learnings.jsonl", 2, expect.stringMatching(/confidence .*\[too_big\]/)],
      ["/g/learnings.jsonl", 3, expect.stringMatching(/ts .*\[format:datetime\]/)],
      ["/g/learnings.jsonl", 4, expect.stringMatching(/files\[1\] .*\[invalid_type\]/)],
    ]);
  });
});
