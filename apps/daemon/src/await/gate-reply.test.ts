import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AnswerRefusal } from "./answer";
import { formatGateReply, type GateItem, optionLetter, parseGateReply } from "./gate-reply";

const ITEMS: GateItem[] = [
  { id: "r1-d3", label: "d3", title: "Drop the session cache", options: ["a", "b"], recommended: null },
  {
    id: "r1-p1",
    label: "p1",
    title: "Approve the plan",
    options: ["a", "b", "c", "d", "e"],
    recommended: "a",
  },
];

const items = fc
  .uniqueArray(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 6 })
  .chain((numbers) =>
    fc.tuple(
      ...numbers.map((n) =>
        fc.integer({ min: 1, max: 6 }).chain((count) =>
          fc.record({
            label: fc.constantFrom(`d${n}`, `p${n}`, `uc${n}`),
            options: fc.constant(Array.from({ length: count }, (_, index) => `option ${index}`)),
            pick: fc.integer({ min: 0, max: count - 1 }),
          }),
        ),
      ),
    ),
  )
  .filter((rows) => new Set(rows.map((row) => row.label)).size === rows.length);

function refusal(reply: string): AnswerRefusal {
  try {
    parseGateReply("dispatch-a", reply, ITEMS);
  } catch (error) {
    if (error instanceof AnswerRefusal) return error;
    throw error;
  }
  throw new Error(`"${reply}" was accepted`);
}

describe("gstack gate replies", () => {
  it("reads back every full choice of tokens", () => {
    fc.assert(
      fc.property(items, (rows) => {
        const gate = rows.map(
          (row): GateItem => ({
            id: `r1-${row.label}`,
            label: row.label,
            title: row.label,
            options: row.options,
            recommended: null,
          }),
        );
        const choices = rows.map((row) => ({ label: row.label, option: optionLetter(row.pick) }));
        expect(parseGateReply("dispatch-a", formatGateReply(choices), gate).choices).toEqual(choices);
      }),
    );
  });

  it("takes the recommendations with all, and overrides them with all except", () => {
    expect(parseGateReply("d", "all except d3b", ITEMS).choices).toEqual([
      { label: "d3", option: "b" },
      { label: "p1", option: "a" },
    ]);
    expect(parseGateReply("d", "D3A p1c", ITEMS).text).toBe("d3a p1c");
  });

  it.each([
    ["yes", /a bare "yes"/],
    ["no", /a bare "no"/],
    ["", /empty/],
    ["all", /d3 has no recommendation to take/],
    ["d3b", /p1 is left without a choice/],
    ["d9a p1a", /"d9a" names no pending decision/],
    ["d3z p1a", /d3 has options a, b/],
    ["d3a d3b p1a", /d3 is named twice/],
    ["all but d3b", /not "all" nor "all except/],
  ])("refuses %j, saying what to send instead", (reply, why) => {
    const error = refusal(reply);
    expect(error.rule).toBe("unparseable");
    expect(error.message).toMatch(why);
    expect(error.message).toContain("gstack-dispatch answer dispatch-a all | d3b");
    expect(error.message).toContain("d3=a/b, p1=a/b/c/d/e");
  });
});
