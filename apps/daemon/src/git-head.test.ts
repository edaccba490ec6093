import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readHeadFromFiles } from "@gstack/daemon-client";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

let base: string;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-git-head-"));
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    cwd,
    encoding: "utf8",
  }).trim();

/** What git itself says about HEAD. */
function fromGit(cwd: string): { commit?: string; branch?: string } {
  let commit: string | undefined;
  let branch: string | undefined;
  try {
    commit = git(cwd, "rev-parse", "--verify", "--quiet", "HEAD") || undefined;
  } catch {}
  try {
    branch = git(cwd, "symbolic-ref", "--quiet", "--short", "HEAD") || undefined;
  } catch {}
  return { ...(commit ? { commit } : {}), ...(branch ? { branch } : {}) };
}

async function repo(name = "repo"): Promise<string> {
  const folder = join(base, name);
  await mkdir(folder, { recursive: true });
  git(folder, "init", "-q", "-b", "main");
  return folder;
}

async function commit(folder: string, file: string): Promise<void> {
  await writeFile(join(folder, file), `${file}\n`);
  git(folder, "add", file);
  git(folder, "commit", "-q", "-m", file);
}

describe("readHeadFromFiles", () => {
  it("agrees with git before the first commit, after commits, and in a subfolder", async () => {
    const folder = await repo();
    expect(await readHeadFromFiles(folder)).toEqual(fromGit(folder));
    expect(await readHeadFromFiles(folder)).toEqual({ branch: "main" });
    await commit(folder, "a.txt");
    expect(await readHeadFromFiles(folder)).toEqual(fromGit(folder));
    await mkdir(join(folder, "src", "deep"), { recursive: true });
    expect(await readHeadFromFiles(join(folder, "src", "deep"))).toEqual(fromGit(folder));
  });

  it("agrees with git on packed refs, a detached HEAD, a branch with slashes and a worktree", async () => {
    const folder = await repo();
    await commit(folder, "a.txt");
    git(folder, "pack-refs", "--all");
    expect(await readHeadFromFiles(folder)).toEqual(fromGit(folder));
    git(folder, "checkout", "-q", "-b", "feature/x-1");
    await commit(folder, "b.txt");
    expect(await readHeadFromFiles(folder)).toEqual({ ...fromGit(folder), branch: "feature/x-1" });
    git(folder, "checkout", "-q", "--detach", "HEAD~1");
    expect(await readHeadFromFiles(folder)).toEqual(fromGit(folder));
    const tree = join(base, "tree");
    git(folder, "worktree", "add", "-q", "-b", "other", tree, "main");
    await commit(tree, "c.txt");
    expect(await readHeadFromFiles(tree)).toEqual(fromGit(tree));
    expect((await readHeadFromFiles(tree))?.branch).toBe("other");
  });

  it("leaves it to git outside a repository and for layouts it does not know", async () => {
    const plain = join(base, "plain");
    await mkdir(plain);
    expect(await readHeadFromFiles(plain)).toBeUndefined();
    const folder = await repo("odd");
    await commit(folder, "a.txt");
    // HEAD pointing somewhere other than a branch: git knows better.
    await writeFile(join(folder, ".git", "HEAD"), "ref: refs/remotes/origin/main\n");
    expect(await readHeadFromFiles(folder)).toBeUndefined();
    await writeFile(join(folder, ".git", "HEAD"), "not a ref at all\n");
    expect(await readHeadFromFiles(folder)).toBeUndefined();
  });

  it("agrees with git after any sequence of commits, branch switches, detaches and ref packing", async () => {
    type Step = "commit" | "branch" | "switch-main" | "detach" | "pack";
    const step = fc.constantFrom<Step>("commit", "branch", "switch-main", "detach", "pack");
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
        round += 1;
        const folder = await repo(`prop-${round}`);
        let files = 0;
        let branches = 0;
        for (const action of steps) {
          const hasCommit = fromGit(folder).commit !== undefined;
          if (action === "commit" || !hasCommit) await commit(folder, `f${files++}.txt`);
          else if (action === "branch") git(folder, "checkout", "-q", "-b", `topic/b${branches++}`);
          else if (action === "switch-main") git(folder, "checkout", "-q", "main");
          else if (action === "detach") git(folder, "checkout", "-q", "--detach");
          else git(folder, "pack-refs", "--all");
          expect(await readHeadFromFiles(folder)).toEqual(fromGit(folder));
        }
      }),
      { numRuns: 12 },
    );
  }, 120_000);
});
