import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { openClawLayout } from "@gstack/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { BridgeSkillError } from "./bridge-skill-error";
import { BRIDGE_SKILL_NAME, bridgeSkillPath } from "./bridge-skill-path";
import { installBridgeSkill } from "./install-bridge-skill";

const folders: string[] = [];
async function temporaryFolder(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), "bridge-skill-install-"));
  folders.push(folder);
  return folder;
}
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(folder.length + 1))
    .sort();
}

describe("installBridgeSkill", () => {
  it("copies the shipped skill into skills/gstack-bridge of a new workspace", async () => {
    const workspace = join(await temporaryFolder(), "workspace");
    const result = await installBridgeSkill(workspace);
    const target = openClawLayout(workspace).skill(BRIDGE_SKILL_NAME);
    expect(result.path).toBe(target);
    expect(result.replaced).toBe(false);
    expect(result.files).toEqual(await filesUnder(bridgeSkillPath));
    expect(result.files).toContain("SKILL.md");
    for (const file of result.files) {
      expect(await readFile(join(target, file), "utf8")).toBe(
        await readFile(join(bridgeSkillPath, file), "utf8"),
      );
    }
    expect(await readdir(openClawLayout(workspace).skills)).toEqual([BRIDGE_SKILL_NAME]);
  });

  it("replaces an earlier copy whole, removes leftovers of an interrupted install and leaves other skills alone", async () => {
    const workspace = await temporaryFolder();
    const layout = openClawLayout(workspace);
    const target = layout.skill(BRIDGE_SKILL_NAME);
    await mkdir(join(target, "references"), { recursive: true });
    await writeFile(join(target, "SKILL.md"), "old");
    await writeFile(join(target, "references", "retired.md"), "a file the new version no longer has");
    await mkdir(layout.skill("calendar"), { recursive: true });
    await writeFile(join(layout.skill("calendar"), "SKILL.md"), "someone else's skill");
    await mkdir(join(layout.skills, `.${BRIDGE_SKILL_NAME}.staging-1-abc`), { recursive: true });

    const result = await installBridgeSkill(workspace);
    expect(result.replaced).toBe(true);
    expect(await filesUnder(target)).toEqual(await filesUnder(bridgeSkillPath));
    expect(await readFile(join(target, "SKILL.md"), "utf8")).toBe(
      await readFile(join(bridgeSkillPath, "SKILL.md"), "utf8"),
    );
    expect(await readFile(join(layout.skill("calendar"), "SKILL.md"), "utf8")).toBe("someone else's skill");
    expect((await readdir(layout.skills)).sort()).toEqual(["calendar", BRIDGE_SKILL_NAME]);
  });

  it("is repeatable: a second install gives the same files", async () => {
    const workspace = await temporaryFolder();
    const first = await installBridgeSkill(workspace);
    const second = await installBridgeSkill(workspace);
    expect(second.files).toEqual(first.files);
    expect(second.replaced).toBe(true);
  });

  it("refuses a relative workspace with a BridgeSkillError naming it", async () => {
    const error = await installBridgeSkill("relative/workspace").catch((caught: unknown) => caught);
    expect(BridgeSkillError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "invalid-workspace", path: "relative/workspace" });
  });

  it("keeps the installed copy when the source is no skill", async () => {
    const workspace = await temporaryFolder();
    await installBridgeSkill(workspace);
    const empty = await temporaryFolder();
    const error = await installBridgeSkill(workspace, { source: empty }).catch((caught: unknown) => caught);
    expect(BridgeSkillError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "missing-skill", path: empty });
    const target = openClawLayout(workspace).skill(BRIDGE_SKILL_NAME);
    expect(await filesUnder(target)).toEqual(await filesUnder(bridgeSkillPath));
  });

  it("keeps the installed copy and leaves no staging folder when the new one cannot be copied", async () => {
    const workspace = await temporaryFolder();
    await installBridgeSkill(workspace);
    const source = await temporaryFolder();
    await writeFile(join(source, "SKILL.md"), "new");
    // Node's copy refuses a named pipe, so the copy fails part-way through.
    await promisify(execFile)("mkfifo", [join(source, "pipe")]);
    const error = await installBridgeSkill(workspace, { source }).catch((caught: unknown) => caught);
    expect(BridgeSkillError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "install-failed" });
    const layout = openClawLayout(workspace);
    expect(await filesUnder(layout.skill(BRIDGE_SKILL_NAME))).toEqual(await filesUnder(bridgeSkillPath));
    expect(await readdir(layout.skills)).toEqual([BRIDGE_SKILL_NAME]);
  });
});
