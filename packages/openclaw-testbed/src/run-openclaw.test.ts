import { afterEach, describe, expect, it } from "vitest";
import { makeOpenClawHome, type OpenClawHome, openclawVersion, runOpenClaw } from "./index";

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
