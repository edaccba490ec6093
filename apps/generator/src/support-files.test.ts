import { access, chmod, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { buildFromFolder } from "./generate";
import { installToWorkspace } from "./install-workspace";
import { installedPathsIn } from "./installed-paths.test-support";
import { referencedSupportPaths } from "./support-files";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "gstack-generator-support-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

async function put(path: string, content: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, content);
}

const SHIP = `---
name: ship
description: Ship a branch.
---
Read \`~/.claude/skills/gstack/ETHOS.md\` first.

\`\`\`bash
eval "$(~/.claude/skills/gstack/bin/gstack-slug 2>/dev/null)"
B="$HOME/.claude/skills/gstack/browse/dist/browse"
\`\`\`

Then follow \`~/.claude/skills/gstack/ship/sections/tests.md\`.
`;

describe("referencedSupportPaths", () => {
  it("finds every path under the gstack folder, without a skill's own SKILL.md or trailing dots", () => {
    expect(
      referencedSupportPaths([
        { source: SHIP },
        {
          source:
            // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell spelling ${HOME}, not a template
            "See ~/.claude/skills/gstack/review/SKILL.md and ${HOME}/.claude/skills/gstack/lib/x.ts. Touch ~/.claude/skills/gstack/.feature-prompted-x once.",
        },
      ]),
    ).toEqual(["ETHOS.md", "bin/gstack-slug", "browse/dist/browse", "lib/x.ts", "ship/sections/tests.md"]);
  });
});

describe("support files", () => {
  it("ship beside the pack, keep helpers executable, and every path in an installed skill exists wherever the workspace is", async () => {
    const gstack = join(root, "gstack");
    await put(join(gstack, "SKILL.md"), "---\nname: gstack\ndescription: The router.\n---\nRoute.\n");
    await put(join(gstack, "ship/SKILL.md"), SHIP);
    await put(
      join(gstack, "ship/sections/tests.md"),
      "# Tests\n\nUse AskUserQuestion to ask which suite to run, then read ~/.claude/skills/gstack/ETHOS.md.\n",
    );
    await put(join(gstack, "ETHOS.md"), "# Ethos\n");
    await put(join(gstack, "bin/gstack-slug"), "#!/bin/sh\necho SLUG=x\n");
    await put(join(gstack, "bin/gstack-config"), "#!/bin/sh\n");
    await chmod(join(gstack, "bin/gstack-slug"), 0o755);

    const bundle = await buildFromFolder({ input: gstack, output: join(root, "out") });
    expect([...bundle.supportFiles.keys()]).toEqual([
      "skills/gstack/ETHOS.md",
      "skills/gstack/bin/gstack-config",
      "skills/gstack/bin/gstack-slug",
      "skills/gstack/ship/sections/tests.md",
    ]);
    expect(bundle.report.missingSupport).toEqual(["browse/dist/browse"]);

    // A workspace outside ~/.openclaw, as OPENCLAW_WORKSPACE_DIR or a profile gives.
    const workspace = join(root, "elsewhere", "workspace");
    await installToWorkspace(bundle, workspace, { home: join(root, "home") });
    const skill = await readFile(join(workspace, "skills/gstack-ship/SKILL.md"), "utf8");
    expect(skill).not.toContain(".openclaw/workspace");
    const paths = installedPathsIn(skill, join(workspace, "skills"));
    expect(paths.length).toBeGreaterThanOrEqual(4);
    for (const path of paths) {
      if (path.endsWith("browse/dist/browse")) continue; // reported missing above
      await expect(access(path), path).resolves.toBeUndefined();
    }
    expect((await stat(join(workspace, "skills/gstack/bin/gstack-slug"))).mode & 0o111).not.toBe(0);
    // A section the skill reads is rewritten like the skill, paths pointed at this workspace.
    expect(await readFile(join(workspace, "skills/gstack/ship/sections/tests.md"), "utf8")).toBe(
      `# Tests\n\nAsk the user in your chat reply which suite to run, then read ${join(workspace, "skills")}/gstack/ETHOS.md.\n`,
    );
  });

  it("leaves the default workspace's paths as written, with ~", async () => {
    const gstack = join(root, "gstack");
    await put(join(gstack, "ship/SKILL.md"), SHIP);
    const home = join(root, "home");
    const bundle = await buildFromFolder({ input: gstack, output: join(root, "out") });
    await installToWorkspace(bundle, join(home, ".openclaw/workspace"), { home });
    const skill = await readFile(join(home, ".openclaw/workspace/skills/gstack-ship/SKILL.md"), "utf8");
    expect(skill).toContain("~/.openclaw/workspace/skills/gstack/ETHOS.md");
  });
});
