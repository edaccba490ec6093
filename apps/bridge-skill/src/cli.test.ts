import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openClawLayout } from "@gstack/contracts";
import { afterEach, describe, expect, it } from "vitest";
import { sourceCommand } from "../../../vitest.source-bundle";
import { BRIDGE_SKILL_NAME, bridgeSkillPath } from "./bridge-skill-path";

const cli = fileURLToPath(new URL("./cli.ts", import.meta.url));
const packageDir = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");

/** Runs the CLI from source (one bundle of it, vitest.source-bundle.ts) in a real Node process. */
function run(args: string[], env: Record<string, string> = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [...sourceCommand(packageDir, cli), ...args], {
      env: { ...process.env, NO_COLOR: "1", ...env },
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

async function fileCount(folder: string): Promise<number> {
  return (await readdir(folder, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile())
    .length;
}

const folders: string[] = [];
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
});

describe("gstack-bridge-skill", () => {
  it("install puts the skill into the workspace OPENCLAW_WORKSPACE_DIR names", async () => {
    const workspace = await mkdtemp(join(tmpdir(), "bridge-skill-cli-"));
    folders.push(workspace);
    const first = await run(["install"], { OPENCLAW_WORKSPACE_DIR: workspace });
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toBe(
      `installed ${openClawLayout(workspace).skill(BRIDGE_SKILL_NAME)} (${await fileCount(bridgeSkillPath)} files)\n`,
    );
    const second = await run(["install", "--workspace", workspace, "--json"]);
    expect(JSON.parse(second.stdout)).toMatchObject({
      replaced: true,
      files: expect.arrayContaining(["SKILL.md"]),
    });
    expect(await readdir(openClawLayout(workspace).skills)).toEqual([BRIDGE_SKILL_NAME]);
  });

  it("path prints the shipped skill folder", async () => {
    const result = await run(["path"]);
    expect(result.stdout).toBe(`${bridgeSkillPath}\n`);
  });

  it("a workspace it cannot use gives one line and a non-zero exit", async () => {
    const result = await run(["install"], { OPENCLAW_WORKSPACE_DIR: "", OPENCLAW_PROFILE: "../escape" });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(/^gstack-bridge-skill: .*OPENCLAW_PROFILE/);
  });
});
