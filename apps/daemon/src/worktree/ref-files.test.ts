import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { branchTips, branchTipsFromFiles } from "@gstack/daemon-client";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

let base: string;
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-C", cwd, "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    encoding: "utf8",
  }).trim();

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-ref-files-"));
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

const names = ["main", "gstack/a", "gstack/b", "feature/x", "c"];
/** What can happen to a repository's branches between two looks. */
const step = fc.oneof(
  fc.record({ kind: fc.constant("branch" as const), name: fc.constantFrom(...names), at: fc.nat(2) }),
  fc.record({ kind: fc.constant("delete" as const), name: fc.constantFrom(...names) }),
  fc.record({ kind: fc.constant("commit" as const), name: fc.constantFrom(...names) }),
  fc.constant({ kind: "pack" as const }),
);

describe("branch tips from git's files", () => {
  it("agree with git for-each-ref through branches made, moved, deleted and packed", async () => {
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 6 }), fc.boolean(), async (steps, linked) => {
        const repo = join(base, `repo-${round++}`);
        await mkdir(repo);
        git(repo, "init", "-q", "-b", "main");
        const commits: string[] = [];
        for (let index = 0; index < 3; index += 1) {
          await writeFile(join(repo, "f.txt"), `${index}\n`);
          git(repo, "add", "f.txt");
          git(repo, "commit", "-q", "-m", `c${index}`);
          commits.push(git(repo, "rev-parse", "HEAD"));
        }
        for (const change of steps) {
          const ref = "name" in change ? `refs/heads/${change.name}` : "";
          if (change.kind === "branch") git(repo, "update-ref", ref, commits[change.at] as string);
          else if (change.kind === "delete" && change.name !== "main") git(repo, "update-ref", "-d", ref);
          else if (change.kind === "commit") {
            const exists = git(repo, "for-each-ref", "--format=%(objectname)", ref);
            const tip = exists.split("\n")[0];
            if (tip) {
              const tree = git(repo, "rev-parse", `${tip}^{tree}`);
              git(repo, "update-ref", ref, git(repo, "commit-tree", tree, "-p", tip, "-m", "more"));
            }
          } else if (change.kind === "pack") git(repo, "pack-refs", "--all");
        }
        // Read from a linked worktree's checkout too: its refs are the common folder's.
        let from = repo;
        if (linked) {
          from = join(base, `linked-${round}`);
          git(repo, "worktree", "add", "-q", "--detach", from, "HEAD");
        }
        const wanted = names.map((name) => `refs/heads/${name}`);
        const fromFiles = branchTipsFromFiles(from, wanted);
        const fromGit = await branchTips(from);
        expect(fromFiles).toBeDefined();
        expect(fromGit).toBeDefined();
        const own = new Map([...(fromGit ?? [])].filter(([ref]) => wanted.includes(ref)));
        expect(fromFiles).toEqual(own);
      }),
      { numRuns: 20 },
    );
  });

  it("leaves to git what is not in the plain layout", async () => {
    const repo = join(base, "odd");
    await mkdir(repo);
    git(repo, "init", "-q", "-b", "main");
    git(repo, "commit", "-q", "--allow-empty", "-m", "one");
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main");
    expect(branchTipsFromFiles(repo, ["refs/heads/main"])?.get("refs/heads/main")).toBe(
      git(repo, "rev-parse", "main"),
    );
    expect(branchTipsFromFiles(repo, ["refs/heads/alias"])).toBeUndefined();
    expect(branchTipsFromFiles(join(base, "not-a-repository"), ["refs/heads/main"])).toBeUndefined();
    await mkdir(join(repo, ".git", "reftable"));
    expect(branchTipsFromFiles(repo, ["refs/heads/main"])).toBeUndefined();
  });
});
