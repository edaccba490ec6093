import { existsSync } from "node:fs";
import { mkdir, symlink } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { makeOpenClawHome, runOpenClaw } from "@gstack/openclaw-testbed";
import { describe, expect, it } from "vitest";
import { buildFromFolder } from "./generate";
import { installToWorkspace } from "./install-workspace";
import { corpusSkipNote, findRealCorpus } from "./real-corpus.test-support";

interface ListedSkill {
  name: string;
  source: string;
  eligible: boolean;
  modelVisible: boolean;
  missing: { bins: string[] };
}

const corpus = findRealCorpus();
/** git from the caller's PATH: the one program every gstack skill may need. */
const GIT = (process.env["PATH"] ?? "")
  .split(delimiter)
  .map((folder) => join(folder, "git"))
  .find((path) => existsSync(path));

describe(`the real gstack pack in the real OpenClaw${corpusSkipNote(corpus)}`, () => {
  it.skipIf(corpus === undefined || GIT === undefined)(
    "shows the model every skill whose required programs are on the PATH, with only git there",
    async () => {
      const home = await makeOpenClawHome();
      try {
        const bundle = await buildFromFolder({ input: corpus ?? "", output: join(home.home, "out") });
        await installToWorkspace(bundle, home.workspace);
        const bin = join(home.home, "bin");
        await mkdir(bin);
        await symlink(GIT ?? "git", join(bin, "git"));

        const run = await runOpenClaw(["skills", "list", "--json"], { home: home.home, env: { PATH: bin } });
        expect(run.code, run.stderr).toBe(0);
        const listed = new Map(
          (JSON.parse(run.stdout) as { skills: ListedSkill[] }).skills.map((skill) => [skill.name, skill]),
        );

        const needsOnlyGit = bundle.report.skills.filter((skill) => skill.bins.every((bin) => bin === "git"));
        for (const skill of bundle.report.skills) {
          const seen = listed.get(skill.name);
          expect(seen, `${skill.name} is loaded`).toBeDefined();
          expect(seen?.source).toBe("openclaw-workspace");
          // Whatever hides a skill is a program the skill itself declared, never a surprise.
          for (const missing of seen?.missing.bins ?? []) expect(skill.bins).toContain(missing);
        }
        for (const skill of needsOnlyGit) {
          const seen = listed.get(skill.name);
          expect({ name: skill.name, eligible: seen?.eligible, modelVisible: seen?.modelVisible }).toEqual({
            name: skill.name,
            eligible: true,
            modelVisible: true,
          });
        }
        // The shared preamble's passing mentions of browse, codex and bun gate nothing.
        expect(needsOnlyGit.length).toBeGreaterThanOrEqual(bundle.report.skills.length - 10);
        for (const skill of bundle.report.skills) {
          expect(skill.bins, skill.name).not.toContain("browse");
        }
      } finally {
        await home.remove();
      }
    },
    180_000,
  );
});
