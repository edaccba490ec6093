import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  AGENTS_SECTION_BEGIN,
  AGENTS_SECTION_END,
  agentsSection,
  mergeAgentsSection,
} from "./agents-section";

describe("agentsSection", () => {
  it("points at the shared routing table", () => {
    const section = agentsSection({ skills: ["gstack-ship", "gstack-qa"] });
    expect(section.startsWith(AGENTS_SECTION_BEGIN)).toBe(true);
    expect(section.trimEnd().endsWith(AGENTS_SECTION_END)).toBe(true);
    expect(section).toContain("`~/.gstack/routing.yaml`");
    expect(section).toContain("(2 in this pack)");
  });
});

describe("mergeAgentsSection", () => {
  const section = agentsSection({ skills: ["gstack-ship"] });

  it("appends to a file without the section and replaces it in place otherwise", () => {
    const once = mergeAgentsSection("# My agents\n\nBe kind.\n", section);
    expect(once).toBe(`# My agents\n\nBe kind.\n\n${section}`);
    const updated = mergeAgentsSection(`${once}\n## After\n`, agentsSection({ skills: ["a-b", "c-d"] }));
    expect(updated).toContain("(2 in this pack)");
    expect(updated.startsWith("# My agents\n\nBe kind.\n\n")).toBe(true);
    expect(updated.endsWith("\n## After\n")).toBe(true);
  });

  it("is idempotent and never changes text outside the markers", () => {
    const text = fc.string().filter((value) => !value.includes("<!-- gstack:"));
    fc.assert(
      fc.property(text, text, (before, after) => {
        const merged = mergeAgentsSection(before, section);
        expect(mergeAgentsSection(merged, section)).toBe(merged);
        const surrounded = `${before}\n${section}${after}`;
        const remerged = mergeAgentsSection(surrounded, section);
        expect(remerged).toBe(surrounded);
      }),
    );
  });
});
