import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { composePrompt, resumePromptOf } from "./resume-prompt";

describe("composePrompt", () => {
  it("keeps everything when it fits", () => {
    const { prompt, shortened } = composePrompt("Head.", [
      { label: "A", text: " one " },
      { label: "B", text: undefined },
      { text: "plain" },
    ]);
    expect(prompt).toBe("Head.\n\nA:\none\n\nplain");
    expect(shortened).toBe(false);
  });

  it("shortens the longest parts first and says so", () => {
    const { prompt, shortened } = composePrompt(
      "Head.",
      [
        { label: "Short", text: "keep me" },
        { label: "Long", text: "x".repeat(500) },
      ],
      { limit: 200, fullTextAt: "/cp.md" },
    );
    expect(shortened).toBe(true);
    expect(prompt.length).toBeLessThanOrEqual(200);
    expect(prompt).toContain("Short:\nkeep me");
    expect(prompt).toContain("…");
    expect(prompt.endsWith("(Shortened to fit 200 characters; the full text is in /cp.md.)")).toBe(true);
  });

  it("never exceeds the limit and leaves fitting input untouched", () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ label: fc.string({ maxLength: 10 }), text: fc.string({ maxLength: 400 }) }), {
          maxLength: 6,
        }),
        fc.integer({ min: 150, max: 800 }),
        (parts, limit) => {
          const result = composePrompt("Continue.", parts, { limit, fullTextAt: "/x.md" });
          expect(result.prompt.length).toBeLessThanOrEqual(limit);
          if (!result.shortened) expect(result).toEqual(composePrompt("Continue.", parts, { limit: 1e9 }));
        },
      ),
    );
  });
});

describe("resumePromptOf", () => {
  const base = {
    from: "gstack",
    to: "wintermute",
    project: "baku",
    timestamp: "2026-04-03T14:30:00Z",
    status: "pending" as const,
  };
  it("uses the written resume prompt as is", () => {
    expect(resumePromptOf({ ...base, resume_prompt: "Do it." })).toEqual({
      prompt: "Do it.",
      generated: false,
      shortened: false,
    });
  });
  it("builds one from the sections when there is none", () => {
    const result = resumePromptOf({ ...base, branch: "auth", context: "Ctx", what_i_need: "Fix it" });
    expect(result.generated).toBe(true);
    expect(result.prompt).toBe(
      "Continue the work handed over from gstack (project baku, branch auth).\n\nContext:\nCtx\n\nWhat is needed:\nFix it",
    );
  });
});
