import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { submodulesNote, WorktreeRefusal, worktreePath } from "@gstack/daemon-client";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { initRepository } from "../test-support";
import { branchNameProblem } from "./branch-name";
import { CHECKING_OUT, materializeWorktree } from "./materialize";
import { planWorktree } from "./plan";

let base: string;
let repo: string;
let root: string;
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-C", cwd, ...args], { encoding: "utf8" }).trim();

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), "gstack-worktree-")));
  repo = join(base, "repo");
  root = join(base, "state");
  initRepository(repo);
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

const request = (extra: Partial<Parameters<typeof planWorktree>[0]> = {}) => ({
  stateRoot: root,
  project: "acme",
  dispatchId: "dispatch-w",
  projectDir: repo,
  now: new Date("2026-11-25T12:00:00Z"),
  ...extra,
});

async function refusedWith(promise: Promise<unknown>): Promise<WorktreeRefusal> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(WorktreeRefusal);
  return error as WorktreeRefusal;
}

describe("branch names", () => {
  it("agrees with git check-ref-format --branch, and refuses what starts with '-'", () => {
    const alphabet = fc.constantFrom(..."ab/.-_@{}~^:?*[\\ \t0lock".split(""));
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: alphabet, maxLength: 12 }), fc.string({ maxLength: 8 })),
        (name) => {
          // `--branch` reads '@' as "the current branch"; as a name it is refused.
          if (name.includes("\0") || name === "@") return;
          let gitAccepts: boolean;
          try {
            execFileSync("git", ["check-ref-format", "--branch", name], { stdio: "pipe" });
            gitAccepts = true;
          } catch {
            gitAccepts = false;
          }
          const ours = branchNameProblem(name) === undefined;
          if (name.startsWith("-")) expect(ours).toBe(false);
          else expect(ours).toBe(gitAccepts);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("names the rule a bad name breaks", () => {
    expect(branchNameProblem("--upload-pack=evil")).toMatch(/must not start with '-'/);
    expect(branchNameProblem("a..b")).toMatch(/'\.\.'/);
    expect(branchNameProblem("feature/x.lock")).toMatch(/\.lock/);
    expect(branchNameProblem("gstack/dispatch-1")).toBeUndefined();
  });
});

describe("a dispatch's worktree", () => {
  it("keeps a project_dir that is a subfolder as the agent's folder in the worktree", async () => {
    await mkdir(join(repo, "packages", "web"), { recursive: true });
    await writeFile(join(repo, "packages", "web", "index.js"), "1\n");
    git(repo, "add", "-A");
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "web");
    const planned = await planWorktree(request({ projectDir: join(repo, "packages", "web") }));
    expect(planned).toMatchObject({
      repo,
      path: worktreePath(root, "acme", "dispatch-w"),
      cwd: join(worktreePath(root, "acme", "dispatch-w"), "packages", "web"),
      branch: "gstack/dispatch-w",
      base: "main",
      land_into: "main",
      base_sha: git(repo, "rev-parse", "HEAD"),
    });
    expect(await materializeWorktree(planned)).toBe(true);
    expect((await stat(join(planned.cwd, "index.js"))).isFile()).toBe(true);
    // Made again after a crash: found, not made twice.
    expect(await materializeWorktree(planned)).toBe(false);
    expect(git(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(2);
  });

  it("clears a folder a crash left half made and makes it again", async () => {
    const planned = await planWorktree(request());
    await mkdir(planned.path, { recursive: true });
    await writeFile(join(planned.path, "partial"), "x");
    expect(await materializeWorktree(planned)).toBe(true);
    expect(git(planned.path, "rev-parse", "--abbrev-ref", "HEAD")).toBe("gstack/dispatch-w");
  });

  it("finishes a worktree whose checkout was cut short, clearing the stale lock in its own git folder", async () => {
    await writeFile(join(repo, "kept.txt"), "kept\n");
    git(repo, "add", "kept.txt");
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "kept");
    const planned = await planWorktree(request());
    // What a kill between registering and checking out leaves: the branch, the worktree
    // registered and locked by the daemon's reason, no files, the index lock of its own folder.
    git(repo, "branch", planned.branch, planned.base_sha);
    await mkdir(join(planned.path, ".."), { recursive: true });
    git(
      repo,
      "worktree",
      "add",
      "-q",
      "--no-checkout",
      "--lock",
      "--reason",
      CHECKING_OUT,
      planned.path,
      planned.branch,
    );
    const own = git(planned.path, "rev-parse", "--absolute-git-dir");
    await writeFile(join(own, "index.lock"), "");
    const personsLock = join(repo, ".git", "index.lock");
    await writeFile(personsLock, "");
    expect(await materializeWorktree(planned)).toBe(true);
    expect(git(planned.path, "status", "--porcelain")).toBe("");
    expect(git(planned.path, "rev-parse", "--abbrev-ref", "HEAD")).toBe(planned.branch);
    expect(await stat(join(planned.path, "kept.txt")).then(() => true)).toBe(true);
    expect(git(repo, "worktree", "list", "--porcelain")).not.toContain("locked");
    // The person's own lock is never taken for the daemon's.
    expect(await stat(personsLock).then(() => true)).toBe(true);
    await rm(personsLock);
    // Asked again: found made, nothing redone.
    expect(await materializeWorktree(planned)).toBe(false);
    expect(git(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(2);
  });

  it("finds a worktree made earlier and clears only the stale index lock of its own git folder", async () => {
    const planned = await planWorktree(request());
    expect(await materializeWorktree(planned)).toBe(true);
    const own = git(planned.path, "rev-parse", "--absolute-git-dir");
    // What a killed agent's git can leave; and a lock in the person's checkout, theirs.
    await writeFile(join(own, "index.lock"), "");
    const personsLock = join(repo, ".git", "index.lock");
    await writeFile(personsLock, "");
    expect(await materializeWorktree(planned)).toBe(false);
    expect(
      await stat(join(own, "index.lock")).then(
        () => true,
        () => false,
      ),
    ).toBe(false);
    expect(
      await stat(personsLock).then(
        () => true,
        () => false,
      ),
    ).toBe(true);
    await rm(personsLock);
    // A worktree that is not on the recorded branch is not taken for it.
    git(planned.path, "checkout", "-q", "-b", "elsewhere");
    await expect(materializeWorktree(planned)).rejects.toThrow(/is on 'elsewhere'/);
  });

  it("makes a worktree cut short before its registration was complete again, touching no other", async () => {
    const other = await planWorktree(request({ dispatchId: "dispatch-other" }));
    await materializeWorktree(other);
    const planned = await planWorktree(request());
    git(repo, "branch", planned.branch, planned.base_sha);
    await mkdir(join(planned.path, ".."), { recursive: true });
    git(
      repo,
      "worktree",
      "add",
      "-q",
      "--no-checkout",
      "--lock",
      "--reason",
      CHECKING_OUT,
      planned.path,
      planned.branch,
    );
    await rm(join(planned.path, ".git"));
    expect(await materializeWorktree(planned)).toBe(true);
    expect(git(planned.path, "status", "--porcelain")).toBe("");
    expect(git(repo, "worktree", "list", "--porcelain").match(/^worktree /gm)).toHaveLength(3);
    expect(await materializeWorktree(other)).toBe(false);
  });

  it("starts from a named base: a tag, and refuses one that does not exist", async () => {
    git(repo, "tag", "v1");
    const first = git(repo, "rev-parse", "HEAD");
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "two");
    expect(await planWorktree(request({ base: "v1" }))).toMatchObject({ base: "v1", base_sha: first });
    const missing = await refusedWith(planWorktree(request({ base: "no-such-branch" })));
    expect(missing.rule).toBe("base-missing");
    expect(missing.message).toContain("'no-such-branch'");
    expect((await refusedWith(planWorktree(request({ base: "--output=/tmp/x" })))).rule).toBe("base-missing");
  });

  it("refuses a dirty base it was asked to start from", async () => {
    await writeFile(join(repo, "f.txt"), "1\n");
    git(repo, "add", "f.txt");
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "f");
    await writeFile(join(repo, "f.txt"), "2\n");
    const refused = await refusedWith(planWorktree(request({ base: "main" })));
    expect(refused.rule).toBe("dirty-base");
    // Without a named base the person's edits are simply not the dispatch's business.
    expect(await planWorktree(request())).toMatchObject({ base: "main" });
  });

  it("refuses where a worktree cannot work, saying why", async () => {
    const plain = join(base, "plain");
    await mkdir(plain);
    expect((await refusedWith(planWorktree(request({ projectDir: plain })))).rule).toBe("not-a-repository");
    const bare = join(base, "bare.git");
    execFileSync("git", ["init", "-q", "--bare", bare]);
    const refusedBare = await refusedWith(planWorktree(request({ projectDir: bare })));
    expect(refusedBare.rule).toBe("bare-repository");
    const empty = join(base, "empty");
    execFileSync("git", ["init", "-q", empty]);
    expect((await refusedWith(planWorktree(request({ projectDir: empty })))).rule).toBe("no-commit");
  });

  it("refuses a repository whose submodules are not initialised", async () => {
    const library = join(base, "library");
    initRepository(library);
    execFileSync("git", [
      "-C",
      repo,
      "-c",
      "protocol.file.allow=always",
      "submodule",
      "add",
      "-q",
      library,
      "lib",
    ]);
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "lib");
    const clone = join(base, "clone");
    execFileSync("git", ["clone", "-q", repo, clone]);
    const refused = await refusedWith(planWorktree(request({ projectDir: clone })));
    expect(refused.rule).toBe("submodules");
    expect(refused.message).toContain("lib");
  });

  it("makes a worktree of a repository with an initialised submodule, which is an empty folder there, and says so", async () => {
    const library = join(base, "library");
    initRepository(library);
    await writeFile(join(library, "inside.txt"), "library file\n");
    git(library, "add", "-A");
    git(library, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "file");
    execFileSync("git", [
      "-C",
      repo,
      "-c",
      "protocol.file.allow=always",
      "submodule",
      "add",
      "-q",
      library,
      "lib",
    ]);
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "lib");
    expect(await readdir(join(repo, "lib"))).toContain("inside.txt");
    const planned = await planWorktree(request());
    expect(planned.submodules).toEqual(["lib"]);
    await materializeWorktree(planned);
    expect(await readdir(join(planned.path, "lib"))).toEqual([]);
    const note = submodulesNote(planned);
    expect(note).toContain("submodule lib is an empty folder in the dispatch's worktree");
    expect(
      submodulesNote(await planWorktree(request({ projectDir: join(base, "library") }))),
    ).toBeUndefined();
  });

  it("refuses a branch checked out elsewhere, a bad branch name, and a project_dir inside a dispatch's worktree", async () => {
    git(repo, "branch", "feature");
    const other = join(base, "other-checkout");
    git(repo, "worktree", "add", "-q", other, "feature");
    expect((await refusedWith(planWorktree(request({ branch: "feature" })))).rule).toBe("branch-checked-out");
    expect((await refusedWith(planWorktree(request({ branch: "-b" })))).rule).toBe("branch-name");
    const planned = await planWorktree(request());
    await materializeWorktree(planned);
    const inside = await refusedWith(
      planWorktree(request({ dispatchId: "dispatch-x", projectDir: planned.path })),
    );
    expect(inside.rule).toBe("inside-worktree");
  });
});
