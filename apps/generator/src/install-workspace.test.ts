import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { fixtureSources } from "./__fixtures__/fixtures";
import { AGENTS_SECTION_BEGIN } from "./agents-section";
import { generateBundle } from "./generate-bundle";
import { installToWorkspace } from "./install-workspace";

let workspace: string;
beforeEach(async () => {
  workspace = await mkdtemp(join(tmpdir(), "gstack-generator-workspace-"));
});
afterEach(async () => {
  await rm(workspace, { recursive: true, force: true });
});

describe("installToWorkspace", () => {
  const bundle = generateBundle(fixtureSources());

  it("installs skills, merges the AGENTS.md section and keeps the user's own SOUL.md", async () => {
    await writeFile(join(workspace, "AGENTS.md"), "# Agents\n\nMy rules.\n");
    await writeFile(join(workspace, "SOUL.md"), "I am Wintermute.\n");
    await mkdir(join(workspace, "skills/weather"), { recursive: true });
    await writeFile(join(workspace, "skills/weather/SKILL.md"), "---\nname: weather\n---\n");

    const result = await installToWorkspace(bundle, workspace);

    expect(result.keptOwnSoul).toBe(true);
    expect(await readFile(join(workspace, "SOUL.md"), "utf8")).toBe("I am Wintermute.\n");
    const agents = await readFile(join(workspace, "AGENTS.md"), "utf8");
    expect(agents.startsWith("# Agents\n\nMy rules.\n\n")).toBe(true);
    expect(agents).toContain(AGENTS_SECTION_BEGIN);
    expect((await readdir(join(workspace, "skills"))).sort()).toEqual([
      "gstack",
      "gstack-investigate",
      "gstack-qa",
      "gstack-review",
      "gstack-ship",
      "weather",
    ]);
    expect(result.written).toContain("AGENTS.md");
    expect(result.written).not.toContain("SOUL.md");
  });

  it("writes SOUL.md into a fresh workspace and changes nothing on a second install", async () => {
    const first = await installToWorkspace(bundle, workspace);
    expect(first.written).toContain("SOUL.md");
    expect(first.keptOwnSoul).toBe(false);
    const second = await installToWorkspace(bundle, workspace);
    expect(second).toEqual({ written: [], removed: [], keptOwnSoul: false });
  });
});
