import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { branchTips, commitsToLand, measureWorktree } from "./measure";

let base: string;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-measure-"));
});

afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, LC_ALL: "C", GIT_DIR: undefined, GIT_WORK_TREE: undefined },
  }).trim();

/** A repository with main, a dispatch branch from its first commit, and each moved as asked. */
function repositoryWith(
  name: string,
  shape: {
    branchCommits: number;
    branchGone: boolean;
    mainCommits: number;
    landInto: "main" | "gone" | "none";
  },
) {
  const repo = join(base, name);
  execFileSync("git", ["init", "-q", "-b", "main", repo]);
  git(repo, "commit", "-q", "--allow-empty", "-m", "base");
  const baseSha = git(repo, "rev-parse", "HEAD");
  git(repo, "branch", "gstack/work");
  for (let index = 0; index < shape.mainCommits; index += 1)
    git(repo, "commit", "-q", "--allow-empty", "-m", `main ${index}`);
  git(repo, "checkout", "-q", "gstack/work");
  for (let index = 0; index < shape.branchCommits; index += 1)
    git(repo, "commit", "-q", "--allow-empty", "-m", `work ${index}`);
  git(repo, "checkout", "-q", "main");
  if (shape.branchGone) git(repo, "branch", "-q", "-D", "gstack/work");
  return {
    repo,
    path: repo,
    branch: "gstack/work",
    base_sha: baseSha,
    ...(shape.landInto === "main" ? { land_into: "main" } : {}),
    ...(shape.landInto === "gone" ? { land_into: "release" } : {}),
  };
}

describe("commitsToLand", () => {
  it("counts the same from the branch tips read once as from asking git for the branch", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          branchCommits: fc.integer({ min: 0, max: 3 }),
          branchGone: fc.boolean(),
          mainCommits: fc.integer({ min: 0, max: 2 }),
          landInto: fc.constantFrom("main" as const, "gone" as const, "none" as const),
        }),
        async (shape) => {
          run += 1;
          const tree = repositoryWith(`repo-${run}`, shape);
          const tips = await branchTips(tree.repo);
          expect(tips).toBeDefined();
          const asked = await commitsToLand(tree);
          expect(await commitsToLand(tree, tips)).toBe(asked);
          expect(asked).toBe(shape.branchGone ? 0 : shape.branchCommits);
          // The measure counts from those tips and records them.
          const measure = await measureWorktree(tree);
          expect(measure?.commits).toBe(asked);
          expect(measure?.tip).toBe(
            shape.branchGone ? undefined : git(tree.repo, "rev-parse", "gstack/work"),
          );
        },
      ),
      { numRuns: 15 },
    );
  });
});
