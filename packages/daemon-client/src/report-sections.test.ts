import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bulletItems, parseReportSections, REPORT_SECTIONS } from "./report-sections";

describe("parseReportSections", () => {
  it("finds the four sections at any heading level and case, ignoring text before them", () => {
    const sections = parseReportSections(
      "Done!\n\n### what shipped\n- a\n## Decisions Made\n- b\n# Learnings logged\n- c\n## Needs human judgment\n- d\n",
    );
    expect(sections).toEqual({
      "What shipped": "- a",
      "Decisions made": "- b",
      "Learnings logged": "- c",
      "Needs human judgment": "- d",
    });
  });

  it("stops a section at an unrelated heading after the report starts", () => {
    expect(parseReportSections("## What shipped\n- a\n## Appendix\nnoise")?.["What shipped"]).toBe("- a");
  });

  it("returns undefined when the agent wrote no report", () => {
    expect(parseReportSections("I changed some files.")).toBeUndefined();
  });

  it("gives an empty body to a section the report leaves out", () => {
    expect(parseReportSections("## What shipped\n- a\n")).toEqual({
      "What shipped": "- a",
      "Decisions made": "",
      "Learnings logged": "",
      "Needs human judgment": "",
    });
  });
});

describe("bulletItems", () => {
  it("joins wrapped lines and drops 'none'", () => {
    expect(bulletItems("- one\n  continued\n* two\n1. three\n- None")).toEqual([
      "one continued",
      "two",
      "three",
    ]);
  });

  it("reads back the items of a section written as a bullet list, under any heading level", () => {
    const item = fc
      .string({ minLength: 1, maxLength: 30 })
      .map((text) => text.replace(/[\r\n]/g, " ").trim())
      .filter((text) => text.length > 0 && !/^(none|n\/a|nothing)\.?$/i.test(text));
    fc.assert(
      fc.property(
        fc.array(item, { minLength: 1, maxLength: 5 }),
        fc.constantFrom(...REPORT_SECTIONS),
        fc.integer({ min: 1, max: 4 }),
        (items, section, level) => {
          const markdown = `${"#".repeat(level)} ${section}\n\n${items.map((entry) => `- ${entry}`).join("\n")}\n`;
          const parsed = parseReportSections(markdown);
          expect(bulletItems(parsed?.[section] ?? "")).toEqual(items);
        },
      ),
    );
  });
});
