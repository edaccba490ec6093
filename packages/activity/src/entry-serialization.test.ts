import { type ActivityEntry, parseJsonLines, SKILL_NAME_PATTERN } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { linePrefilter, matchesFilter } from "./activity-filter";
import { entryIdentity } from "./entry-identity";

const text = fc.string({ unit: "grapheme", minLength: 1, maxLength: 10 });
const slug = fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,20}$/);
const entry: fc.Arbitrary<ActivityEntry> = fc
  .record(
    {
      ts: fc
        .date({ min: new Date("2000-01-01Z"), max: new Date("2099-12-31Z"), noInvalidDate: true })
        .map((date) => date.toISOString()),
      project: slug,
      skill: text.filter((value) => SKILL_NAME_PATTERN.test(value)),
      duration: fc.nat({ max: 1_000_000 }),
      artifacts: fc.array(fc.string({ maxLength: 12 }), { maxLength: 3 }),
      dispatch: text,
      branch: text,
      outcome: text,
      session: text,
      source: fc.constantFrom("timeline" as const, "daemon" as const, "manual" as const, "openclaw" as const),
      model: fc.string({ maxLength: 8 }),
    },
    { requiredKeys: ["ts", "project", "skill", "duration"] },
  )
  .map((value) => value as ActivityEntry);

describe("entry serialization", () => {
  it("round-trips any valid entry, unknown fields included, through a JSON line", () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 5 }), (entries) => {
        const text = `${entries.map((item) => JSON.stringify(item)).join("\n")}\n`;
        const { entries: parsed, problems } = parseJsonLines("activity-entry", text);
        expect(problems).toEqual([]);
        expect(parsed.map((item) => item.value)).toEqual(entries);
        expect(parsed.map((item) => entryIdentity(item.value))).toEqual(entries.map(entryIdentity));
      }),
    );
  });

  it("lets the line prefilter pass every serialized entry that the filter matches", () => {
    fc.assert(
      fc.property(entry, entry, (target, other) => {
        const filter = { project: target.project, skill: target.skill, dispatch: target.dispatch };
        for (const candidate of [target, other]) {
          if (matchesFilter(candidate, filter))
            expect(linePrefilter(filter)(JSON.stringify(candidate))).toBe(true);
        }
      }),
    );
  });
});
