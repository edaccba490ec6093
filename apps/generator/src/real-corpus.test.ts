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
          const relativeToPack = path.startsWith(`${packFolder}/`) ? path.slice(packFolder.length + 1) : path;
          if (!missing.has(relativeToPack)) unaccounted.push(`${skill.name}: ${path}`);
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
