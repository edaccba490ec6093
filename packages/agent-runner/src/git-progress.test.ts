import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { crossCheckProgress, gitProgress, headSha } from "./git-progress";

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

const env = {
  ...process.env,
  GIT_AUTHOR_NAME: "T",
  GIT_AUTHOR_EMAIL: "t@example.invalid",
  GIT_COMMITTER_NAME: "T",
  GIT_COMMITTER_EMAIL: "t@example.invalid",
};

function repository(): { cwd: string; git: (...args: string[]) => string } {
  const cwd = mkdtempSync(join(tmpdir(), "git-progress-"));
  folders.push(cwd);
  const git = (...args: string[]) => execFileSync("git", args, { cwd, env, encoding: "utf8" }).trim();
  git("init", "-q", "-b", "main");
  return { cwd, git };
}

describe("gitProgress", () => {
  it("counts commits since the start, newest first, with the branch and dirty state", async () => {
    const { cwd, git } = repository();
    git("commit", "-q", "--allow-empty", "-m", "Start");
    const start = await headSha(cwd);
    expect(start).toMatch(/^[0-9a-f]{40}$/);
    expect(await gitProgress(cwd, start)).toMatchObject({
      commitCount: 0,
      commits: [],
      branch: "main",
      dirty: false,
    });
    git("commit", "-q", "--allow-empty", "-m", "One");
    git("commit", "-q", "--allow-empty", "-m", "Two");
    writeFileSync(join(cwd, "pending.txt"), "x");
    const progress = await gitProgress(cwd, start);
    expect(progress.commitCount).toBe(2);
    expect(progress.commits.map((commit) => commit.subject)).toEqual(["Two", "One"]);
    expect(progress.headSha).toBe(git("rev-parse", "HEAD"));
    expect(progress.dirty).toBe(true);
  });

  it("counts every commit when the repository had none at the start, and reads a detached HEAD", async () => {
    const { cwd, git } = repository();
    expect(await headSha(cwd)).toBeUndefined();
    expect(await gitProgress(cwd, undefined)).toMatchObject({ commitCount: 0, branch: "main" });
    git("commit", "-q", "--allow-empty", "-m", "First");
    expect((await gitProgress(cwd, undefined)).commitCount).toBe(1);
    git("checkout", "-q", "--detach");
    expect((await gitProgress(cwd, undefined)).branch).toBeUndefined();
  });
});

describe("crossCheckProgress", () => {
  it("reads the agent's step against git's commits", () => {
    expect(crossCheckProgress(2, { step: 3, totalSteps: 5 }).status).toBe("consistent");
    expect(crossCheckProgress(3, { step: 3 }).status).toBe("consistent");
    expect(crossCheckProgress(1, { step: 5, totalSteps: 5 })).toMatchObject({
      status: "commits_missing",
      reportedDone: 4,
    });
    expect(crossCheckProgress(6, { step: 2 }).status).toBe("ahead_of_report");
    expect(crossCheckProgress(1).status).toBe("no_report");
  });

  it("flags missing commits exactly when fewer commits than finished steps exist", () => {
    fc.assert(
      fc.property(fc.nat(50), fc.integer({ min: 1, max: 50 }), (commits, step) => {
        const check = crossCheckProgress(commits, { step });
        expect(check.status === "commits_missing").toBe(commits < step - 1);
        expect(check.message.length).toBeGreaterThan(0);
      }),
    );
  });
});
