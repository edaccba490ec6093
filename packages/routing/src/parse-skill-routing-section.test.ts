import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseSkillRoutingSection } from "./parse-skill-routing-section";
import { resolveRoutes } from "./resolve-routes";

const gstackSection = `# Project

Some notes.

## Skill routing

When the user's request matches an available skill, ALWAYS invoke it using the Skill
tool as your FIRST action.

Key routing rules:
- Product ideas, "is this worth building", brainstorming → invoke office-hours
- Bugs, errors, "why is this broken", 500 errors → invoke investigate
- Ship, deploy, push, create PR → invoke ship
- QA/testing site behavior → invoke /qa or /qa-only
- Design system/plan review → invoke /design-consultation or /plan-design-review

\`\`\`
- inside a fence → invoke not-a-rule
\`\`\`

## Testing

- Run tests → invoke not-in-section
`;

describe("parseSkillRoutingSection", () => {
  it("reads gstack's bullet rules into routes with line numbers", () => {
    const section = parseSkillRoutingSection(gstackSection, "CLAUDE.md");
    expect(section.found).toBe(true);
    expect(section.warnings).toEqual([]);
    expect(section.routes.map((route) => route.skills)).toEqual([
      ["office-hours"],
      ["investigate"],
      ["ship"],
      ["qa", "qa-only"],
      ["design-consultation", "plan-design-review"],
    ]);
    expect(section.routes[1]).toMatchObject({
      line: 12,
      name: 'Bugs, errors, "why is this broken", 500 errors',
      match: { task_type: ["bugs", "errors", "why is this broken", "500 errors", "investigate"] },
    });
    expect(section.routes[3]!.match.task_type).toEqual(["qa", "testing site behavior", "qa-only"]);
  });

  it("routes a task type named by a phrase or by the skill itself", () => {
    const section = parseSkillRoutingSection(gstackSection);
    const table = { source: { kind: "inline" as const }, routes: section.routes, warnings: [] };
    expect(resolveRoutes(table, { task_type: "Bugs" }).skills).toEqual(["investigate"]);
    expect(resolveRoutes(table, { task_type: "ship" }).skills).toEqual(["ship"]);
    expect(resolveRoutes(table, { task_type: "is this worth building" }).skills).toEqual(["office-hours"]);
    expect(resolveRoutes(table, { task_type: "security" }).skills).toEqual([]);
  });

  it("accepts other arrows, verbs, skill spellings and 'when' conditions", () => {
    const markdown = [
      "## Skill Routing:",
      "- when touching payments -> use /cso",
      "* Releases => run `ship` and `document-release`",
      "1. Weekly retro → $retro",
      "- Strategy (big picture) → invoke /plan-ceo-review (then /autoplan)",
    ].join("\n");
    const section = parseSkillRoutingSection(markdown);
    expect(section.routes.map((route) => [route.match.task_type, route.skills])).toEqual([
      [["touching payments", "cso"], ["cso"]],
      [
        ["releases", "ship", "document-release"],
        ["ship", "document-release"],
      ],
      [["weekly retro", "retro"], ["retro"]],
      [["strategy \\(big picture\\)", "plan-ceo-review"], ["plan-ceo-review"]],
    ]);
    const table = { source: { kind: "inline" as const }, routes: section.routes, warnings: [] };
    expect(resolveRoutes(table, { task_type: "strategy (big picture)" }).skills).toEqual(["plan-ceo-review"]);
  });

  it("reads table rows whose last cell names a skill", () => {
    const markdown = [
      "## Skill routing",
      "| When | Skill |",
      "|---|---|",
      "| record this, reflect | `/reflect` |",
      "| plain words | not a skill |",
    ].join("\n");
    const section = parseSkillRoutingSection(markdown);
    expect(section.routes).toHaveLength(1);
    expect(section.routes[0]).toMatchObject({ skills: ["reflect"], line: 4 });
  });

  it("warns about a rule it cannot use and ignores prose", () => {
    const section = parseSkillRoutingSection("## Skill routing\n- Something → \n- just prose\n", "AGENTS.md");
    expect(section.routes).toEqual([]);
    expect(section.warnings).toEqual([
      { path: "AGENTS.md", line: 2, message: "skipped a routing rule without a skill: Something →" },
    ]);
  });

  it("reports a missing section and ignores look-alike headings", () => {
    expect(parseSkillRoutingSection("# Title\n## Skill routing priorities\n- a → invoke b\n")).toEqual({
      found: false,
      routes: [],
      warnings: [],
    });
    expect(parseSkillRoutingSection("```\n## Skill routing\n- a → b\n```\n").found).toBe(false);
  });

  it("round trip: rules rendered as bullets come back as the same skills and phrases", () => {
    const word = fc
      .stringMatching(/^[a-z][a-z0-9]{0,8}$/)
      .filter((text) => !["or", "and", "then", "when"].includes(text));
    const phrase = fc.array(word, { minLength: 1, maxLength: 3 }).map((words) => words.join(" "));
    const skill = fc
      .stringMatching(/^[a-z][a-z0-9-]{0,12}[a-z0-9]$/)
      .filter((text) => !/(^|-)(or|and|then)(-|$)/.test(text));
    const rule = fc.record({
      phrases: fc.uniqueArray(phrase, { minLength: 1, maxLength: 3 }),
      skills: fc.uniqueArray(skill, { minLength: 1, maxLength: 3 }),
    });
    fc.assert(
      fc.property(fc.array(rule, { maxLength: 6 }), fc.constantFrom("→", "->", "=>"), (rules, arrow) => {
        const markdown = [
          "# Notes",
          "## Skill routing",
          "Prose before the rules.",
          ...rules.map(
            (item) =>
              `- ${item.phrases.join(", ")} ${arrow} invoke ${item.skills.map((name) => `/${name}`).join(" or ")}`,
          ),
          "## Next",
        ].join("\n");
        const section = parseSkillRoutingSection(markdown);
        expect(section.routes.map((route) => route.skills)).toEqual(rules.map((item) => item.skills));
        section.routes.forEach((route, index) => {
          const types = route.match.task_type as string[];
          for (const text of rules[index]!.phrases) expect(types).toContain(text);
          expect(route.line).toBe(index + 4);
        });
      }),
    );
  });
});
