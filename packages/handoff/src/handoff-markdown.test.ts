import { ContractError, type HandoffInput, RESUME_PROMPT_MAX } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HandoffError } from "./handoff-error";
import { formatHandoff, parseHandoffMarkdown } from "./handoff-markdown";

const designHandoff: HandoffInput = {
  id: "20260403-143000-baku",
  from: "gstack",
  to: "wintermute",
  project: "baku",
  branch: "garrytan/auth-flow",
  timestamp: "2026-04-03T14:30:00Z",
  context: "Working on JWT auth flow. Got stuck on refresh token rotation test.",
  state: "- Branch has 2 commits: schema migration + middleware skeleton\n- Tests written but failing",
  what_i_need: "Debug the refresh token rotation test failure and fix it.",
  resume_prompt: "Load gstack. Continue work on branch garrytan/auth-flow in ~/git/baku.",
};

describe("formatHandoff / parseHandoffMarkdown", () => {
  it("writes ordinary text as plain Markdown", () => {
    const markdown = formatHandoff(designHandoff);
    expect(markdown).toBe(
      [
        "---",
        "id: 20260403-143000-baku",
        "from: gstack",
        "to: wintermute",
        "project: baku",
        "branch: garrytan/auth-flow",
        "timestamp: 2026-04-03T14:30:00Z",
        "---",
        "",
        "## Context",
        "",
        "Working on JWT auth flow. Got stuck on refresh token rotation test.",
        "",
        "## State",
        "",
        "- Branch has 2 commits: schema migration + middleware skeleton",
        "- Tests written but failing",
        "",
        "## What I need",
        "",
        "Debug the refresh token rotation test failure and fix it.",
        "",
        "## Resume prompt",
        "",
        "Load gstack. Continue work on branch garrytan/auth-flow in ~/git/baku.",
        "",
      ].join("\n"),
    );
    expect(parseHandoffMarkdown(markdown)).toEqual({ ...designHandoff, status: "pending" });
  });

  it("fences text that plain Markdown would change", () => {
    const context = "## State\nnot a section\n```ts\nconst a = 1;\n```\n";
    const markdown = formatHandoff({ ...designHandoff, context });
    expect(markdown).toContain(
      "## Context\n\n````verbatim\n## State\nnot a section\n```ts\nconst a = 1;\n```\n\n````\n",
    );
    expect(parseHandoffMarkdown(markdown).context).toBe(context);
  });

  it("reads a hand-written file with a title, other heading case and order", () => {
    const markdown = [
      "---",
      "from: wintermute",
      "to: gstack",
      "project: baku",
      "timestamp: 2026-04-03T14:30:00+02:00",
      "---",
      "# Handoff",
      "## resume prompt",
      "Pick up the calendar sync.",
      "## context",
      "",
      "Calendar sync is half done.",
    ].join("\n");
    expect(parseHandoffMarkdown(markdown)).toMatchObject({
      context: "Calendar sync is half done.",
      resume_prompt: "Pick up the calendar sync.",
      status: "pending",
    });
  });

  it("names the line of a structural mistake", () => {
    const head = "---\nfrom: gstack\nto: openclaw\nproject: baku\ntimestamp: 2026-04-03T14:30:00Z\n---\n";
    expect(() => parseHandoffMarkdown(`${head}## Notes\nx\n`, "h.md")).toThrow(
      /^h\.md:7: unknown section '## Notes'/,
    );
    expect(() => parseHandoffMarkdown(`${head}stray text\n`, "h.md")).toThrow(
      /^h\.md:7: text outside a section/,
    );
    expect(() => parseHandoffMarkdown(`${head}## State\na\n## State\nb\n`, "h.md")).toThrow(
      /h\.md:9: '## State' appears twice/,
    );
    expect(() => parseHandoffMarkdown("no frontmatter", "h.md")).toThrow(/h\.md:1: must start with '---'/);
    expect(() => parseHandoffMarkdown(`${head}## State\n\`\`\`verbatim\nopen`, "h.md")).toThrow(/not closed/);
    expect(() => parseHandoffMarkdown("---\nfrom: [\n---\n", "h.md")).toThrow(/^h\.md:\d+: frontmatter: /);
  });

  it("validates fields against the contract", () => {
    const markdown = "---\nfrom: Gstack!\nto: openclaw\nproject: baku\ntimestamp: yesterday\n---\n";
    let error: unknown;
    try {
      parseHandoffMarkdown(markdown, "h.md");
    } catch (caught) {
      error = caught;
    }
    expect(ContractError.isInstance(error)).toBe(true);
    expect((error as ContractError).issues.map((issue) => issue.path)).toEqual(["from", "timestamp"]);
  });

  it("refuses a resume prompt over 4096 characters instead of cutting it", () => {
    const resume_prompt = "x".repeat(RESUME_PROMPT_MAX + 1);
    let error: unknown;
    try {
      formatHandoff({ ...designHandoff, resume_prompt });
    } catch (caught) {
      error = caught;
    }
    expect(HandoffError.isInstance(error) && error.code).toBe("resume-prompt-too-long");
    expect((error as Error).message).toContain("4097 characters; the limit is 4096");
    expect(() =>
      formatHandoff({ ...designHandoff, resume_prompt: "y".repeat(RESUME_PROMPT_MAX) }),
    ).not.toThrow();
  });

  const tricky = fc.constantFrom(
    "",
    " ",
    "\n",
    "## State",
    "## Resume prompt\n",
    "---",
    "```",
    "````verbatim",
    "```verbatim\nx\n```",
    "~~~",
    "# title",
    "\r\n",
    "a\r",
    "  indented",
    "trailing  ",
    "é 中文 🎉 \u0000 \u2028",
    "\\",
    "`",
  );
  const sectionText = fc.oneof(
    fc.string({ unit: "grapheme", maxLength: 60 }),
    fc
      .array(fc.oneof(tricky, fc.string({ maxLength: 12 })), { maxLength: 6 })
      .map((parts) => parts.join("\n")),
    fc.array(tricky, { maxLength: 4 }).map((parts) => parts.join("")),
  );
  const safeSectionText = sectionText.map((text) =>
    text.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g, ""),
  );
  const name = fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,20}$/);
  const handoff = fc.record(
    {
      id: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_-]{0,30}$/),
      from: name,
      to: name,
      project: fc.stringMatching(/^[A-Za-z0-9._-]{1,30}$/).filter((slug) => slug !== "." && slug !== ".."),
      // A branch is a git ref: the schema refuses one starting with '-'.
      branch: fc.string({ minLength: 1, maxLength: 30 }).filter((branch) => !branch.startsWith("-")),
      timestamp: fc
        .date({ min: new Date("2000-01-01"), max: new Date("2100-01-01"), noInvalidDate: true })
        .map((date) => date.toISOString()),
      status: fc.constantFrom("pending" as const, "picked_up" as const),
      project_dir: fc.string({ minLength: 1, maxLength: 30 }),
      // The schema refuses control characters and bidirectional overrides in every section.
      context: safeSectionText,
      state: safeSectionText,
      what_i_need: safeSectionText,
      resume_prompt: safeSectionText,
    },
    { requiredKeys: ["from", "to", "project", "timestamp", "status"] },
  );

  it("round trip: write then read gives back the same handoff for any section text", () => {
    fc.assert(
      fc.property(handoff, (original) => {
        expect(parseHandoffMarkdown(formatHandoff(original))).toEqual(original);
      }),
      { numRuns: 500 },
    );
  });

  it("round trip keeps unknown frontmatter fields", () => {
    const original = { ...designHandoff, status: "pending" as const, priority: 3, tags: ["auth", "yes"] };
    expect(parseHandoffMarkdown(formatHandoff(original))).toEqual(original);
  });
});
