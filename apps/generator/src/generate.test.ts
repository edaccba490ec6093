import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureSkillsDir, fixtureSources, fixtureTemplatesDir } from "./__fixtures__/fixtures";
import { fixtureResolvers } from "./__fixtures__/templates/resolvers";
import { checkFolder, generateToFolder } from "./generate";
import { generateBundle } from "./generate-bundle";
import { GeneratorError } from "./generator-error";
import { isUpToDate } from "./output-files";
import { validateOpenClawSkill } from "./validate-openclaw-skill";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "gstack-generator-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("generateBundle", () => {
  const bundle = generateBundle(fixtureSources(), { gstackVersion: "1.68.3.12" });

  it("writes one skill folder per gstack skill, the meta-package, SOUL.md, AGENTS.md and the plan", () => {
    expect([...bundle.files.keys()]).toEqual([
      "AGENTS.md",
      "SOUL.md",
      "clawhub.json",
      "skills/gstack-investigate/SKILL.md",
      "skills/gstack-qa/SKILL.md",
      "skills/gstack-review/SKILL.md",
      "skills/gstack-ship/SKILL.md",
      "skills/gstack/SKILL.md",
      "skills/gstack/SOUL.md",
    ]);
    expect(bundle.report.skipped).toEqual([
      { source: "gstack-upgrade/SKILL.md", reason: expect.stringContaining("clawhub update") },
    ]);
  });

  it("passes OpenClaw's loading rules and strict validator for every generated SKILL.md, with nothing Claude-only left", () => {
    for (const [path, content] of bundle.files) {
      if (!path.endsWith("/SKILL.md")) continue;
      expect(validateOpenClawSkill({ folderName: path.split("/")[1]!, content }), path).toEqual([]);
    }
    expect(bundle.report.leftoverCount).toBe(0);
    expect(bundle.report.errorCount).toBe(0);
  });

  it("makes the root skill the meta-package that lists and installs every member", () => {
    const pack = bundle.files.get("skills/gstack/SKILL.md") ?? "";
    expect(pack).toContain("## Routing");
    expect(pack).toContain(
      "clawhub install gstack-qa\nclawhub install gstack-review\nclawhub install gstack-ship\n",
    );
    expect(bundle.files.get("skills/gstack/SOUL.md")).toBe(bundle.files.get("SOUL.md"));
    expect(JSON.parse(bundle.files.get("clawhub.json") ?? "{}")).toMatchObject({
      gstackVersion: "1.68.3.12",
      version: "1.68.3012",
      metaPackage: "gstack",
    });
  });

  it("generates its own meta-package when the input has no root skill", () => {
    const withoutRoot = generateBundle(fixtureSources().filter((source) => source.gstackName !== ""));
    const pack = withoutRoot.files.get("skills/gstack/SKILL.md") ?? "";
    expect(validateOpenClawSkill({ folderName: "gstack", content: pack })).toEqual([]);
    expect(pack).toContain("clawhub install gstack-ship");
    expect(withoutRoot.files.has("clawhub.json")).toBe(false);
  });

  it("gives the same bytes whatever order the sources come in", () => {
    const reversed = generateBundle([...fixtureSources()].reverse(), { gstackVersion: "1.68.3.12" });
    expect([...reversed.files]).toEqual([...bundle.files]);
  });
});

describe("generateToFolder and checkFolder", () => {
  it("writes byte-identical output on a rerun and reports it up to date", async () => {
    const options = { input: fixtureSkillsDir, output: join(root, "openclaw"), gstackVersion: "1.68.3.0" };
    const first = await generateToFolder(options);
    expect(first.written).toHaveLength(9);
    const before = await readFile(join(root, "openclaw/skills/gstack-ship/SKILL.md"));
    const second = await generateToFolder(options);
    expect(second.written).toEqual([]);
    expect(await readFile(join(root, "openclaw/skills/gstack-ship/SKILL.md"))).toEqual(before);
    expect(isUpToDate((await checkFolder(options)).difference)).toBe(true);
  });

  it("finds changed, missing and stale generated files, and a rerun repairs them", async () => {
    const input = join(root, "gstack");
    await cp(fixtureSkillsDir, input, { recursive: true });
    const options = { input, output: join(root, "openclaw") };
    await generateToFolder(options);
    await writeFile(join(root, "openclaw/SOUL.md"), "edited\n");
    await rm(join(root, "openclaw/AGENTS.md"));
    await rm(join(input, "qa"), { recursive: true });
    const { difference } = await checkFolder(options);
    expect(difference).toEqual({
      missing: ["AGENTS.md"],
      changed: expect.arrayContaining(["SOUL.md"]),
      stale: ["skills/gstack-qa"],
    });
    const repaired = await generateToFolder(options);
    expect(repaired.removed).toEqual(["skills/gstack-qa"]);
    expect(isUpToDate((await checkFolder(options)).difference)).toBe(true);
  });

  it("leaves skill folders it did not generate alone", async () => {
    const output = join(root, "openclaw");
    await mkdir(join(output, "skills/my-own"), { recursive: true });
    await writeFile(join(output, "skills/my-own/SKILL.md"), "---\nname: my-own\n---\n");
    await generateToFolder({ input: fixtureSkillsDir, output });
    expect(await readFile(join(output, "skills/my-own/SKILL.md"), "utf8")).toBe("---\nname: my-own\n---\n");
  });

  it("reads gstack's VERSION file for the publish plan", async () => {
    const input = join(root, "gstack");
    await cp(fixtureSkillsDir, input, { recursive: true });
    await writeFile(join(input, "VERSION"), "2.0.1.7\n");
    const { plan } = await generateToFolder({ input, output: join(root, "out") });
    expect(plan?.version).toBe("2.0.1007");
  });

  it("expands SKILL.md.tmpl templates with the caller's resolvers before transforming", async () => {
    const output = join(root, "out");
    const result = await generateToFolder({
      input: fixtureTemplatesDir,
      output,
      resolvers: fixtureResolvers,
    });
    const retro = await readFile(join(output, "skills/gstack-retro/SKILL.md"), "utf8");
    expect(retro).toContain('echo "SKILL: retro"');
    expect(retro).toContain("## Question Format\n\nEvery question you ask the user names the branch.");
    expect(retro).toContain("Window: window 7d.");
    expect(retro).toContain(
      "Read the commit log with the exec tool. If the window is unclear, ask the user in your chat reply for it.",
    );
    expect(retro).not.toMatch(/\{\{|gstack-update-check/);
    expect(result.report.leftoverCount).toBe(0);
  });

  it("names the template file and line of an unknown placeholder", async () => {
    const input = join(root, "templates");
    await mkdir(join(input, "broken"), { recursive: true });
    await writeFile(
      join(input, "broken/SKILL.md.tmpl"),
      "---\nname: broken\ndescription: x\n---\n\n{{NOPE}}\n",
    );
    const failure = await generateToFolder({
      input,
      output: join(root, "out"),
      resolvers: fixtureResolvers,
    }).catch((error: unknown) => error);
    expect(GeneratorError.isInstance(failure)).toBe(true);
    expect((failure as Error).message).toMatch(
      /^broken\/SKILL\.md\.tmpl:6: unknown placeholder \{\{NOPE\}\}/,
    );
  });

  it("names the file and line of broken frontmatter", async () => {
    const input = join(root, "gstack");
    await mkdir(join(input, "bad"), { recursive: true });
    await writeFile(join(input, "bad/SKILL.md"), "---\nname: bad\ndescription: [unclosed\n---\nBody\n");
    await expect(generateToFolder({ input, output: join(root, "out") })).rejects.toThrow(
      /^bad\/SKILL\.md:\d+: frontmatter is not valid YAML/,
    );
  });
});
