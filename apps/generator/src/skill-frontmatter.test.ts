import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { oneLineDescription } from "./skill-description";
import { transformSkill } from "./transform-skill";
import { validateOpenClawSkill } from "./validate-openclaw-skill";

const options = {
  skillNames: new Set<string>(),
  skillsRoot: "~/.openclaw/workspace/skills",
  homepage: "https://github.com/garrytan/gstack",
  license: "MIT",
};
const word = fc.stringMatching(/^[a-z0-9]{1,10}$/);
const skillName = fc.array(word, { minLength: 1, maxLength: 4 }).map((words) => words.join("-"));
const description = fc.string({ minLength: 1, maxLength: 1500 }).filter((text) => /[A-Za-z0-9]/.test(text));

describe("generated frontmatter", () => {
  it("passes OpenClaw's loader and strict validator for any hyphen-case name and any description", () => {
    fc.assert(
      fc.property(skillName, description, (name, text) => {
        const source = `---\nname: ${name}\ndescription: ${JSON.stringify(text)}\nversion: 1.0.0\n---\n\nBody.\n`;
        const skill = transformSkill({ gstackName: name, file: `${name}/SKILL.md`, source }, options);
        const issues = validateOpenClawSkill({ folderName: skill.name, content: skill.content });
        expect(issues.filter((issue) => issue.severity === "error")).toEqual([]);
        expect(issues.filter((issue) => issue.rule === "docs.description")).toEqual([]);
      }),
      { numRuns: 150 },
    );
  });

  it("keeps a name YAML would read as a number as written (counterexample found by the property above)", () => {
    for (const name of ["1e21", "0x1f", "1e-3", "007"]) {
      const source = `---\nname: ${name}\ndescription: A skill.\n---\n\nBody.\n`;
      const skill = transformSkill({ gstackName: name, file: `${name}/SKILL.md`, source }, options);
      expect(skill.name).toBe(`gstack-${name}`);
      expect(validateOpenClawSkill({ folderName: skill.name, content: skill.content })).toEqual([]);
    }
  });

  it("keeps descriptions on one line, under 160 characters, without angle brackets", () => {
    fc.assert(
      fc.property(description, (text) => {
        const result = oneLineDescription(text, "x/SKILL.md", (value) => value);
        expect(result.length).toBeLessThan(160);
        expect(result).not.toMatch(/[<>\n]/);
      }),
    );
  });

  it("keeps a short description as it is, whitespace collapsed", () => {
    expect(oneLineDescription("Ship  the\n  branch.\n", "x", (value) => value)).toBe("Ship the branch.");
    expect(oneLineDescription("Map a -> b and <c>.", "x", (value) => value)).toBe("Map a → b and c.");
  });

  it("refuses an empty description, naming the file", () => {
    expect(() => oneLineDescription("  ", "ship/SKILL.md", (value) => value)).toThrow(
      /^ship\/SKILL\.md: frontmatter field 'description' is missing or empty/,
    );
    expect(() => oneLineDescription("<>", "ship/SKILL.md", (value) => value)).toThrow(
      /empty once angle brackets/,
    );
  });
});
