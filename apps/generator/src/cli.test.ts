import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureSkillsDir, fixtureTemplatesDir } from "./__fixtures__/fixtures";

const run = promisify(execFile);
const cli = join(import.meta.dirname, "cli.ts");

async function gen(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", cli, ...args], {
      cwd: import.meta.dirname,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code: number; stdout: string; stderr: string };
    return { code: failure.code, stdout: failure.stdout, stderr: failure.stderr };
  }
}

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "gstack-generator-cli-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("gstack-openclaw-gen", () => {
  it("generates, then --check passes; after an edit --check exits 1 naming the stale file", async () => {
    const out = join(root, "openclaw");
    const generated = await gen(["generate", "--input", fixtureSkillsDir, "--out", out, "--json"]);
    expect(generated.code).toBe(0);
    const result = JSON.parse(generated.stdout) as { written: string[]; report: { leftoverCount: number } };
    expect(result.written).toContain("skills/gstack-ship/SKILL.md");
    expect(result.report.leftoverCount).toBe(0);

    expect((await gen(["generate", "--input", fixtureSkillsDir, "--out", out, "--check"])).code).toBe(0);
    await writeFile(join(out, "skills/gstack-qa/SKILL.md"), "stale\n");
    const check = await gen(["generate", "--input", fixtureSkillsDir, "--out", out, "--check"]);
    expect(check.code).toBe(1);
    expect(check.stdout).toContain("stale   skills/gstack-qa/SKILL.md");
    expect(check.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("prints the ClawHub publish plan as a dry run", async () => {
    const plan = await gen(["publish-plan", "--input", fixtureSkillsDir, "--gstack-version", "1.68.3.2"]);
    expect(plan.code).toBe(0);
    expect(plan.stdout.trim().split("\n").at(-1)).toBe(
      "clawhub skill publish skills/gstack --version 1.68.3002",
    );
  });

  it("reads templates with a resolver module", async () => {
    const out = join(root, "out");
    const result = await gen([
      "report",
      "--input",
      fixtureTemplatesDir,
      "--out",
      out,
      "--resolvers",
      join(fixtureTemplatesDir, "resolvers.ts"),
      "--json",
    ]);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).skills.map((skill: { name: string }) => skill.name)).toEqual([
      "gstack",
      "gstack-retro",
    ]);
  });

  it("fails with one readable line on bad input", async () => {
    const missing = await gen(["generate", "--input", join(root, "nothing"), "--out", join(root, "out")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^gstack-openclaw-gen: .*nothing: cannot read the input folder\n$/);
    const badVersion = await gen(["publish-plan", "--input", fixtureSkillsDir, "--gstack-version", "1.2.3"]);
    expect(badVersion.code).toBe(2);
    expect(badVersion.stderr).toMatch(/not a four-part gstack version/);
  });

  it("refuses an unknown option instead of ignoring it", async () => {
    const typo = await gen(["generate", "--input", fixtureSkillsDir, "--out", join(root, "out"), "--stirct"]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe(
      "gstack-openclaw-gen: unknown option --stirct for generate; run generate --help for the options\n",
    );
  });

  it("installs skills, AGENTS.md section and SOUL.md into a workspace", async () => {
    const workspace = join(root, "workspace");
    const installed = await gen([
      "install",
      "--input",
      fixtureSkillsDir,
      "--workspace",
      workspace,
      "--openclaw-version",
      "2026.1.0",
      "--json",
    ]);
    expect(installed.code).toBe(0);
    expect(installed.stderr).toBe("warning: gstack-qa needs OpenClaw 2026.3.0 or newer; this is 2026.1.0\n");
    const result = JSON.parse(installed.stdout) as { workspace: string; written: string[] };
    expect(result.workspace).toBe(workspace);
    expect(result.written).toEqual(
      expect.arrayContaining(["AGENTS.md", "SOUL.md", "skills/gstack-ship/SKILL.md"]),
    );
  });

  it("prints usage with --help", async () => {
    const help = await gen(["generate", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--check");
  });
});
