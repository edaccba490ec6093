import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  makeOpenClawHome,
  type OpenClawHome,
  openclawPackageDir,
  openclawVersion,
  relabelledOpenClaw,
  runOpenClaw,
} from "./index";

let home: OpenClawHome | undefined;
afterEach(async () => {
  await home?.remove();
  home = undefined;
});

describe("the pinned OpenClaw", () => {
  it("runs offline in a throw-away home and reports its pinned version", async () => {
    home = await makeOpenClawHome();
    const run = await runOpenClaw(["--version"], { home: home.home });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`OpenClaw ${openclawVersion}`);
  });

  it("lists the skills of the isolated workspace as JSON", async () => {
    home = await makeOpenClawHome();
    const run = await runOpenClaw(["skills", "list", "--json"], { home: home.home });
    expect(run.code, run.stderr).toBe(0);
    const listed = JSON.parse(run.stdout) as { workspaceDir: string; skills: { name: string }[] };
    expect(listed.workspaceDir).toBe(home.workspace);
    expect(listed.skills.length).toBeGreaterThan(10);
  });
});

describe("the pinned OpenClaw relabelled", () => {
  it("reports the version it was given, and leaves the pinned package as it was", async () => {
    const folder = await mkdtemp(join(tmpdir(), "openclaw-relabelled-"));
    try {
      home = await makeOpenClawHome();
      const bin = await relabelledOpenClaw("2099.1.2", folder);
      const run = await runOpenClaw(["--version"], { home: home.home, bin });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toMatch(/^OpenClaw 2099\.1\.2 \(/);
      const pinned = await runOpenClaw(["--version"], { home: home.home });
      expect(pinned.stdout).toContain(`OpenClaw ${openclawVersion} (`);
      const buildInfo = JSON.parse(
        await readFile(join(openclawPackageDir, "dist", "build-info.json"), "utf8"),
      );
      expect(buildInfo.version).toBe(openclawVersion);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
