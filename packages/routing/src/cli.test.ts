import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gstackLayout } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const cli = fileURLToPath(new URL("./cli.ts", import.meta.url));

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", cli, ...args], {
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "routing-cli-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("gstack-routing", () => {
  it("resolves a task as JSON, with absolute paths made relative to the project", async () => {
    await writeFile(
      gstackLayout(root).routing,
      "routes:\n  - match: { project: baku, files: ['calendar/**'] }\n    load: [kitsune-context]\n  - match: { task_type: security }\n    skills: [gstack-cso]\n",
    );
    const result = await run([
      "resolve",
      "--root",
      root,
      "--project-dir",
      "/home/me/baku",
      "--project",
      "baku",
      "--files",
      "/home/me/baku/calendar/sync/api.ts,README.md",
      "--json",
    ]);
    expect(result.code).toBe(0);
    const output = JSON.parse(result.stdout);
    expect(output).toMatchObject({ load: ["kitsune-context"], skills: [], source: { kind: "routing.yaml" } });
    expect(output.unmatched[0].failed[0].reason).toBe("the task gives no task type");
  });

  it("rejects a broken routing.yaml with one line naming line and column, exit 1", async () => {
    await writeFile(gstackLayout(root).routing, "routes:\n  - match: { projekt: baku }\n    skills: [x]\n");
    const result = await run(["check", "--root", root]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `gstack-routing: ${gstackLayout(root).routing}: invalid routing: routes[0].match: has unknown key(s) "projekt" (line 2, column 14) [unrecognized_keys]\n`,
    );
  });

  it("checks the CLAUDE.md fallback and explains a resolution in text", async () => {
    await writeFile(
      join(root, "CLAUDE.md"),
      "## Skill routing\n- Bugs, errors → invoke investigate\n- Broken → \n",
    );
    const checked = await run(["check", "--root", root, "--project-dir", root]);
    expect(checked.stdout).toBe(`${join(root, "CLAUDE.md")}: 1 route(s)\n`);
    expect(checked.stderr).toContain(":3: skipped a routing rule without a skill");
    const resolved = await run(["resolve", "--root", root, "--project-dir", root, "--task-type", "errors"]);
    expect(resolved.stdout).toContain("skills: investigate");
    expect(resolved.stdout).toContain('+ Bugs, errors (line 2): task type "errors" matches "errors"');
  });
});
