import { parseValue } from "@gstack/contracts";
import { parseReportSections, REPORT_SECTIONS, type ReportSections } from "@gstack/daemon-client";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { completeSections, describeUsage, renderReport } from "./report";

const completion = parseValue("completion", {
  dispatch_id: "dispatch-x",
  status: "completed",
  duration: 3,
  commits: 1,
});

describe("renderReport and parseReportSections", () => {
  it("reads back what renderReport wrote, for any section text", () => {
    const line = fc
      .string({ minLength: 1, maxLength: 40 })
      .filter((text) => !/^\s*#/.test(text) && !/[\r\n]/.test(text));
    const body = fc
      .array(line, { minLength: 1, maxLength: 4 })
      .map((lines) => lines.join("\n").trim())
      .filter(Boolean);
    fc.assert(
      fc.property(fc.tuple(body, body, body, body), (bodies) => {
        const sections = Object.fromEntries(
          REPORT_SECTIONS.map((name, index) => [name, bodies[index]]),
        ) as ReportSections;
        const markdown = renderReport(completion, sections, "A task");
        const frontmatter = markdown.split("\n---\n")[0]?.replace(/^---\n/, "") ?? "";
        expect(parseValue("completion", parseYaml(frontmatter))).toEqual(completion);
        const parsed = parseReportSections(markdown);
        for (const name of REPORT_SECTIONS) expect(parsed?.[name]).toBe(sections[name].trim());
      }),
    );
  });
});

describe("completeSections", () => {
  it("says what is known when the agent wrote no report", () => {
    const failed = parseValue("completion", {
      dispatch_id: "dispatch-x",
      status: "failed",
      duration: 3,
      error: "API Error: 500",
      error_kind: "tool_failure",
    });
    const sections = completeSections(undefined, failed, {
      task: "t",
      finalText: "I gave up",
      commitSubjects: ["abc1234 First"],
      learningsRecorded: [],
    });
    expect(sections["What shipped"]).toContain("1 commit:\n- abc1234 First");
    expect(sections["What shipped"]).toContain("> I gave up");
    expect(sections["Needs human judgment"]).toContain("ended **failed** (tool_failure): API Error: 500");
    expect(sections["Decisions made"]).toBe("None reported.");
  });
});

describe("describeUsage", () => {
  it("says the tokens an agent reported, and nothing (no made-up cost) when it reported none", () => {
    expect(
      describeUsage({ inputTokens: 1200, outputTokens: 340, totalTokens: 1540, cachedReadTokens: 800 }),
    ).toBe("The agent reported 1540 tokens (1200 in, 340 out, 800 read from cache).");
    expect(describeUsage(undefined)).toBeUndefined();
    const report = renderReport(
      completion,
      Object.fromEntries(REPORT_SECTIONS.map((name) => [name, "x"])) as ReportSections,
      "Add a file",
      describeUsage({ inputTokens: 5, outputTokens: 7, totalTokens: 12 }),
    );
    expect(report).toContain("The agent reported 12 tokens (5 in, 7 out). Cost: not reported by the agent.");
  });
});
