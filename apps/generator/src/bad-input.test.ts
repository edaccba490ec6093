import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildFromFolder } from "./generate";
import { MAX_SKILL_BYTES } from "./validate-openclaw-skill";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "gstack-generator-bad-input-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function put(path: string, content: string | Uint8Array): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, content);
}

const skill = (name: string, body = "Body.\n") =>
  `---\nname: ${name}\ndescription: The ${name} skill.\n---\n${body}`;
const build = () => buildFromFolder({ input: root, output: join(root, "out") });

describe("bad input", () => {
  it("reads a SKILL.md that starts with a UTF-8 byte order mark", async () => {
    await put(join(root, "ship/SKILL.md"), `\uFEFF${skill("ship")}`);
    const bundle = await build();
    expect(bundle.report.skills.map((entry) => entry.name)).toContain("gstack-ship");
    expect(bundle.files.get("skills/gstack-ship/SKILL.md")).toMatch(/^---\nname: gstack-ship\n/);
  });

  it("names the file when it has no frontmatter", async () => {
    await put(join(root, "ship/SKILL.md"), "# Ship\n\nNo frontmatter here.\n");
    await expect(build()).rejects.toThrow(
      /^ship\/SKILL\.md:1: has no frontmatter: a SKILL\.md must open with a --- line/,
    );
  });

  it("refuses a file that is not UTF-8, naming the file, line and byte", async () => {
    await put(
      join(root, "ship/SKILL.md"),
      Buffer.concat([Buffer.from(skill("ship", "Caf")), Buffer.from([0xe9, 0x0a])]),
    );
    await expect(build()).rejects.toThrow(
      /ship\/SKILL\.md:5: is not UTF-8 text \(byte 0xe9 at offset \d+\); save it as UTF-8/,
    );
  });

  it("says a folder named SKILL.md is a folder", async () => {
    await mkdir(join(root, "ship/SKILL.md"), { recursive: true });
    await expect(build()).rejects.toThrow(/ship\/SKILL\.md: is a folder, not a file/);
  });

  it("generates a skill folder linked to another skill once, under its real name", async () => {
    await put(join(root, "open-gstack-browser/SKILL.md"), skill("open-gstack-browser"));
    await symlink("open-gstack-browser", join(root, "connect-chrome"));
    const bundle = await build();
    const names = bundle.report.skills.map((entry) => entry.name);
    expect(names.filter((name) => name === "gstack-open-gstack-browser")).toHaveLength(1);
    expect(names).not.toContain("gstack-connect-chrome");
    expect([...bundle.files.keys()].filter((path) => path.includes("connect-chrome"))).toEqual([]);
  });

  it("does not write a skill OpenClaw would skip for its size, and says why", async () => {
    await put(join(root, "ship/SKILL.md"), skill("ship"));
    await put(
      join(root, "huge/SKILL.md"),
      skill("huge", `${"A line of text that repeats.\n".repeat(MAX_SKILL_BYTES / 20)}`),
    );
    const bundle = await build();
    expect(bundle.files.has("skills/gstack-huge/SKILL.md")).toBe(false);
    expect(bundle.report.skipped).toEqual([
      {
        source: "huge/SKILL.md",
        reason: expect.stringMatching(
          /^\d+ bytes once generated; OpenClaw skips a SKILL\.md over 256000 bytes/,
        ),
      },
    ]);
  });
});
