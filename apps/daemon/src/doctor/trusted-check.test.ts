import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { initRepository } from "../test-support";
import { checkConfig, type DoctorContext } from "./doctor-checks";

let home: string;
let context: DoctorContext;

beforeEach(async () => {
  home = await realpath(await mkdtemp(join(tmpdir(), "gstack-doctor-trusted-")));
  context = { layout: gstackLayout(join(home, ".gstack")), env: { HOME: home }, home, platform: "linux" };
  await mkdir(join(home, ".gstack"));
});

afterEach(() => rm(home, { recursive: true, force: true }));

async function trustedChecks(entries: string[]) {
  await writeFile(context.layout.config, `dispatch:\n  trusted_repos: ${JSON.stringify(entries)}\n`);
  const { checks } = await checkConfig(context);
  return new Map(
    checks.filter((check) => check.name.startsWith("trusted:")).map((check) => [check.name, check]),
  );
}

describe("doctor: each trusted folder and the repository it belongs to", () => {
  it("flags a trusted folder whose .git leads into a repository that is not trusted, and says what to add", async () => {
    initRepository(join(home, "git", "own"));
    initRepository(join(home, "elsewhere", "victim"));
    execFileSync("git", [
      "-C",
      join(home, "elsewhere", "victim"),
      "worktree",
      "add",
      "-q",
      "-b",
      "x",
      join(home, "x"),
    ]);
    await mkdir(join(home, "git", "app"), { recursive: true });
    await writeFile(
      join(home, "git", "app", ".git"),
      `gitdir: ${join(home, "elsewhere", "victim", ".git", "worktrees", "x")}\n`,
    );
    await mkdir(join(home, "git", "broken"));
    await writeFile(join(home, "git", "broken", ".git"), "gitdir: /nonexistent/for/doctor\n");
    const checks = await trustedChecks(["~/git/own", "~/git/app", "~/git/broken", "~/git/*", "~/gone"]);
    // A trusted repository of its own, and a glob: nothing to say.
    expect(checks.has("trusted:~/git/own")).toBe(false);
    expect(checks.has("trusted:~/git/*")).toBe(false);
    expect(checks.get("trusted:~/git/app")).toMatchObject({ status: "fail" });
    expect(checks.get("trusted:~/git/app")?.detail).toContain(
      `belongs to the git repository ${join(home, "elsewhere", "victim")}, which is not trusted (its .git file`,
    );
    expect(checks.get("trusted:~/git/app")?.fix).toBe(
      `add ${join(home, "elsewhere", "victim")} to dispatch.trusted_repos in ${context.layout.config} if you trust that repository, or remove ~/git/app from it`,
    );
    expect(checks.get("trusted:~/git/broken")).toMatchObject({ status: "fail" });
    expect(checks.get("trusted:~/git/broken")?.detail).toMatch(/^is in a git repository git refuses to use/);
    expect(checks.get("trusted:~/gone")).toMatchObject({ status: "fail", detail: "does not exist" });
  });

  it("says nothing of a trusted linked worktree whose repository is trusted as well", async () => {
    initRepository(join(home, "git", "main"));
    execFileSync("git", [
      "-C",
      join(home, "git", "main"),
      "worktree",
      "add",
      "-q",
      "-b",
      "t",
      join(home, "git", "main-t"),
    ]);
    const checks = await trustedChecks(["~/git/main", "~/git/main-t"]);
    expect([...checks.values()]).toEqual([]);
  });
});
