import { access, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildFromFolder } from "./generate";
import type { Bundle } from "./generate-bundle";
import { installToWorkspace } from "./install-workspace";
import { installedPathsIn } from "./installed-paths.test-support";
import { corpusSkipNote, findRealCorpus } from "./real-corpus.test-support";

const corpus = findRealCorpus();

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(corpus === undefined)(
  `the real gstack corpus, generated and installed${corpusSkipNote(corpus)}`,
  () => {
    let root: string;
    let workspace: string;
    let bundle: Bundle;

    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), "gstack-generator-corpus-"));
      // A workspace outside ~/.openclaw, as OPENCLAW_WORKSPACE_DIR or a profile gives.
      workspace = join(root, "custom-workspace");
      bundle = await buildFromFolder({ input: corpus ?? "", output: join(root, "out") });
      await installToWorkspace(bundle, workspace, { home: join(root, "home") });
    });
    afterAll(async () => {
      await rm(root, { recursive: true, force: true });
    });

    it("generates every skill with no validator error", () => {
      expect(bundle.report.skills.length).toBeGreaterThan(50);
      expect(bundle.report.errorCount).toBe(0);
    });

    it("installs what the skills read, and every path they name exists or is reported missing from the input", async () => {
      const skillsFolder = join(workspace, "skills");
      const packFolder = join(skillsFolder, "gstack");
      const missing = new Set(bundle.report.missingSupport);
      const unaccounted: string[] = [];
      let checked = 0;
      for (const skill of bundle.report.skills) {
        const content = await readFile(join(skillsFolder, skill.name, "SKILL.md"), "utf8");
        expect(content, skill.name).not.toContain(".openclaw/workspace");
        for (const path of installedPathsIn(content, skillsFolder)) {
          checked++;
          if (await exists(path)) continue;
          // A hidden file beside the pack (`.feature-prompted-*`) is a marker the skill creates.
          if (/\/\.[^/]+$/.test(path) && content.includes("touch marker")) continue;
          const relativeToPack = path.startsWith(`${packFolder}/`) ? path.slice(packFolder.length + 1) : path;
          if (!missing.has(relativeToPack)) unaccounted.push(`${skill.name}: ${path}`);
        }
      }
      for (const path of bundle.supportFiles.keys()) {
        if (!path.endsWith(".md")) continue;
        const content = await readFile(join(workspace, path), "utf8");
        for (const named of installedPathsIn(content, skillsFolder)) {
          checked++;
          if (await exists(named)) continue;
          const relativeToPack = named.startsWith(`${packFolder}/`)
            ? named.slice(packFolder.length + 1)
            : named;
          if (!missing.has(relativeToPack)) unaccounted.push(`${path}: ${named}`);
        }
      }
      expect(checked).toBeGreaterThan(500);
      expect(unaccounted).toEqual([]);
      // What is reported missing really is absent from the input, not dropped on the way.
      for (const path of missing) expect(await exists(join(corpus ?? "", path)), path).toBe(false);
      // The sections and ETHOS.md the skills read are in the corpus, so they are installed.
      expect(await exists(join(packFolder, "ETHOS.md"))).toBe(true);
      expect(await exists(join(packFolder, "ship/sections/tests.md"))).toBe(true);
    });
  },
);

describe.skipIf(corpus === undefined)(
  `the real gstack corpus, read as OpenClaw instructions${corpusSkipNote(corpus)}`,
  () => {
    let skills: { name: string; content: string }[];
    let bundle: Bundle;

    beforeAll(async () => {
      bundle = await buildFromFolder({ input: corpus ?? "", output: join(tmpdir(), "unused") });
      skills = bundle.report.skills.map((skill) => ({
        name: skill.name,
        content: bundle.files.get(`skills/${skill.name}/SKILL.md`) ?? "",
      }));
    });

    it("leaves no Claude-only reference in prose, and counts every class left in code", () => {
      const inProse = bundle.report.skills.flatMap((skill) =>
        skill.leftovers
          .filter((leftover) => leftover.context === "prose")
          .map((leftover) => `${skill.name}:${leftover.line} ${leftover.construct}: ${leftover.text}`),
      );
      for (const file of bundle.report.supportLeftovers) {
        for (const leftover of file.leftovers) {
          if (leftover.context === "prose")
            inProse.push(`${file.path}:${leftover.line} ${leftover.construct}: ${leftover.text}`);
        }
      }
      expect(inProse).toEqual([]);
      const counted = Object.values(bundle.report.leftoversByConstruct)
        .flatMap((byContext) => Object.values(byContext))
        .reduce((sum, count) => sum + (count ?? 0), 0);
      expect(counted).toBe(bundle.report.leftoverCount);
    });

    it("has no broken sentence the rewriting used to produce", () => {
      const broken = [
        /\bVia ask the user\b/,
        /\btool_use, not prose\b/,
        /\bcall the tool\b/,
        /\bcalling presenting\b/,
        /\bOpenClaw v\d/,
        /\bevery asking\b/i,
        /\bMUST be ask the user\b/,
        /\bEmit ONE ask\b/,
      ];
      const found = skills.flatMap(({ name, content }) =>
        broken.filter((pattern) => pattern.test(content)).map((pattern) => `${name}: ${pattern}`),
      );
      expect(found).toEqual([]);
    });

    it("leaves no sentence that introduces something and then stops", async () => {
      // An introduction ("…, name it and log:") straight before a heading or the end, where
      // gstack's own text went on with what it introduced.
      const introductionThenHeading = /^([^\n`|>#-][^\n]*:)\n+(?:#{1,6} |(?![\s\S]))/gm;
      const dangling: string[] = [];
      for (const { name, content } of skills) {
        const file = bundle.report.skills.find((skill) => skill.name === name)?.source ?? "";
        const source = await readFile(join(corpus ?? "", file), "utf8").catch(() => "");
        const intendedBeforeHeading = new Set(
          [...source.matchAll(introductionThenHeading)].map((match) => (match[1] ?? "").slice(0, 25)),
        );
        for (const match of content.matchAll(introductionThenHeading)) {
          const line = match[1] ?? "";
          if (!intendedBeforeHeading.has(line.slice(0, 25))) dangling.push(`${name}: ${line}`);
        }
      }
      expect(dangling).toEqual([]);
    });

    it("removes the telemetry question whole and keeps the spawned-session rule and the timeline's completed event", () => {
      for (const { name, content } of skills) {
        expect(content, name).not.toMatch(/telemetry/i);
        expect(content, name).not.toContain("TEL_PROMPTED");
      }
      const withSpawnRule = skills.filter(({ content }) => content.includes("SPAWNED_SESSION: true"));
      expect(withSpawnRule.length).toBeGreaterThan(40);
      for (const { name, content } of withSpawnRule) {
        expect(content, name).toMatch(/If `SPAWNED_SESSION` is true, skip feature discovery\./);
      }
      expect(skills.filter(({ content }) => content.includes('"event":"completed"')).length).toBeGreaterThan(
        40,
      );
    });

    it("promises no blocking in the skills whose Claude Code hooks are gone", () => {
      for (const name of ["gstack-freeze", "gstack-careful", "gstack-guard"]) {
        const content = skills.find((skill) => skill.name === name)?.content ?? "";
        expect(content, name).toContain("Not enforced on OpenClaw");
        expect(content, name).not.toMatch(/will be \**blocked|hookSpecificOutput/);
      }
    });
  },
);
