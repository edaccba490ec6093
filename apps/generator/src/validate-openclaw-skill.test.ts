import { describe, expect, it } from "vitest";
import { validateOpenClawSkill } from "./validate-openclaw-skill";

const valid = `---
name: gstack-ship
description: "Ship a branch."
license: MIT
metadata: {"openclaw":{"emoji":"🚀","requires":{"bins":["git"]}}}
---
Body.
`;

function rulesOf(content: string, folderName = "gstack-ship"): string[] {
  return validateOpenClawSkill({ folderName, content }).map((issue) => `${issue.rule} ${issue.field}`);
}

describe("validateOpenClawSkill", () => {
  it("accepts a skill that loads and passes the strict validator", () => {
    expect(rulesOf(valid)).toEqual([]);
  });

  it("requires frontmatter opening the file", () => {
    expect(rulesOf(`\n${valid}`)).toEqual(["load.frontmatter "]);
    expect(rulesOf("---\nname: x\n")).toEqual(["load.frontmatter "]);
  });

  it("reports empty name or description, which OpenClaw skips silently", () => {
    expect(rulesOf(valid.replace('description: "Ship a branch."', 'description: ""'))).toContain(
      "load.empty description",
    );
    expect(rulesOf(valid.replace("name: gstack-ship", "name:"))).toContain("load.empty name");
  });

  it("refuses top-level keys the strict validator does not allow", () => {
    expect(rulesOf(valid.replace("license: MIT", "version: 1.0.0\ntriggers: [a]"))).toEqual([
      "strict.keys version",
      "strict.keys triggers",
    ]);
  });

  it("checks the name: hyphen-case, at most 64 characters, equal to the folder", () => {
    expect(rulesOf(valid, "other")).toEqual(["strict.name name"]);
    expect(rulesOf(valid.replace("name: gstack-ship", "name: Gstack_Ship"), "Gstack_Ship")).toContain(
      "strict.name name",
    );
    const long = `gstack-${"a".repeat(60)}`;
    expect(rulesOf(valid.replace("name: gstack-ship", `name: ${long}`), long)).toContain("strict.name name");
  });

  it("checks the description: angle brackets, length, one line", () => {
    expect(rulesOf(valid.replace("Ship a branch.", "Ship <branch>."))).toEqual([
      "strict.description description",
    ]);
    expect(rulesOf(valid.replace("Ship a branch.", "x".repeat(1025)))).toEqual([
      "strict.description description",
      "docs.description description",
    ]);
    expect(rulesOf(valid.replace('"Ship a branch."', "|\n  one\n  two"))).toEqual([
      "docs.description description",
    ]);
  });

  it("reads metadata as JSON5 and checks metadata.openclaw", () => {
    expect(rulesOf(valid.replace(/metadata: .*/, "metadata: '{openclaw: {emoji: \"x\",},}'"))).toEqual([]);
    expect(rulesOf(valid.replace(/metadata: .*/, "metadata: '{openclaw:'"))).toEqual([
      "load.metadata metadata",
    ]);
    expect(
      rulesOf(valid.replace(/metadata: .*/, 'metadata: {"openclaw":{"requires":{"bins":"git"}}}')),
    ).toEqual(["load.metadata metadata.openclaw.requires.bins"]);
    expect(
      rulesOf(valid.replace(/metadata: .*/, 'metadata: {"openclaw":{"install":[{"kind":"apt"}]}}')),
    ).toEqual(["load.install-kind metadata.openclaw.install[0].kind"]);
  });

  it("reports files OpenClaw skips for size", () => {
    expect(rulesOf(valid + "x".repeat(256_001))).toEqual(["load.size "]);
  });
});
