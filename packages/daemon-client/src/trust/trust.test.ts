import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkTrust, folderOrRepositoryListed } from "./trust";

let base: string;
let trusted: string;
let untrusted: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    cwd,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  }).trim();

async function repo(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  git(path, "init", "-q", "-b", "main");
  git(path, "commit", "-q", "--allow-empty", "-m", "start");
  return path;
}

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), "gstack-trust-")));
  trusted = join(base, "trusted");
  untrusted = join(base, "untrusted");
  await mkdir(trusted);
  await repo(join(untrusted, "repo"));
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

async function refusal(folder: string, list: readonly string[] = [trusted]) {
  const verdict = await checkTrust(folder, list);
  expect(verdict.ok, `${folder} should be refused`).toBe(false);
  if (verdict.ok) throw new Error("unreachable");
  return verdict.refusal;
}

describe("checkTrust: trust follows the repository", () => {
  it("accepts a repository inside the trusted folder, with its real path and repository", async () => {
    const own = await repo(join(trusted, "own"));
    expect(await checkTrust(own, [trusted])).toMatchObject({
      ok: true,
      folder: own,
      repository: { commonDir: join(own, ".git"), workTree: own, mainWorkTree: own },
    });
  });

  it("refuses a trusted folder whose .git file points into an untrusted repository's worktree, naming folder, repository, rule and fix", async () => {
    const victim = join(untrusted, "repo");
    git(victim, "worktree", "add", "-q", "-b", "x", join(untrusted, "x"));
    const folder = join(trusted, "app");
    await mkdir(folder);
    await writeFile(join(folder, ".git"), `gitdir: ${join(victim, ".git", "worktrees", "x")}\n`);
    const refused = await refusal(folder);
    expect(refused.rule).toBe("trusted-repos");
    expect(refused.reason).toContain(`project_dir ${folder} belongs to the git repository ${victim}`);
    expect(refused.reason).toContain(
      `its .git file ${join(folder, ".git")} points to ${join(victim, ".git", "worktrees", "x")}`,
    );
    expect(refused.reason).toContain(`whose commondir is ${join(victim, ".git")}`);
    expect(refused.reason).toContain("Trust follows the repository");
    expect(refused.reason).toMatch(new RegExp(`add ${victim} to dispatch.trusted_repos in config.yaml$`));
  });

  it("refuses a .git file or link straight at another repository's git folder, relative or absolute", async () => {
    const victim = join(untrusted, "repo");
    for (const [name, make] of [
      ["absolute", (folder: string) => writeFile(join(folder, ".git"), `gitdir: ${join(victim, ".git")}\n`)],
      [
        "relative",
        (folder: string) => writeFile(join(folder, ".git"), "gitdir: ../../untrusted/repo/.git\n"),
      ],
      ["link", (folder: string) => symlink(join(victim, ".git"), join(folder, ".git"))],
    ] as const) {
      const folder = join(trusted, name);
      await mkdir(folder);
      await make(folder);
      const refused = await refusal(folder);
      expect(refused.reason, name).toContain(`belongs to the git repository ${victim}`);
      expect(refused.reason, name).toContain(`its git folder ${join(victim, ".git")}`);
    }
  });

  it("refuses a worktree git folder made by hand whose commondir leads to an untrusted repository", async () => {
    const victim = join(untrusted, "repo");
    const own = join(trusted, "decoy", "gitdir");
    await mkdir(own, { recursive: true });
    await writeFile(join(own, "HEAD"), "ref: refs/heads/main\n");
    await writeFile(join(own, "commondir"), `${join(victim, ".git")}\n`);
    const folder = join(trusted, "decoy", "checkout");
    await mkdir(folder);
    await writeFile(join(folder, ".git"), "gitdir: ../gitdir\n");
    const refused = await refusal(folder);
    expect(refused.reason).toContain(`whose commondir is ${join(victim, ".git")}`);
  });

  it("refuses a repository whose core.worktree puts its checkout outside, and a trusted subfolder of an untrusted repository", async () => {
    const moved = await repo(join(trusted, "moved"));
    git(moved, "config", "core.worktree", join(untrusted, "repo"));
    const refused = await refusal(moved);
    expect(refused.reason).toContain(`its checkout ${join(untrusted, "repo")}`);
    expect(refused.reason).toContain("whose core.worktree is");

    const sub = join(untrusted, "repo", "service");
    await mkdir(sub);
    const inner = await refusal(sub, [sub]);
    expect(inner.reason).toContain(`it lies in the checkout ${join(untrusted, "repo")}`);
    expect(inner.reason).toMatch(new RegExp(`add ${join(untrusted, "repo")} to dispatch.trusted_repos`));
  });

  it("accepts a linked worktree whose repository is trusted too, refuses one whose repository is not", async () => {
    const main = await repo(join(trusted, "main"));
    git(main, "worktree", "add", "-q", "-b", "topic", join(trusted, "main-topic"));
    expect(await checkTrust(join(trusted, "main-topic"), [trusted])).toMatchObject({
      ok: true,
      repository: {
        commonDir: join(main, ".git"),
        mainWorkTree: main,
        workTree: join(trusted, "main-topic"),
      },
    });
    // The worktree's folder alone is listed; its repository is not.
    const alone = await refusal(join(trusted, "main-topic"), [join(trusted, "main-topic")]);
    expect(alone.reason).toContain(`belongs to the git repository ${main}`);
  });

  it("judges a folder in no repository by itself, and refuses one git refuses to use", async () => {
    const plain = join(trusted, "plain");
    await mkdir(plain);
    const verdict = await checkTrust(plain, [trusted]);
    // The temporary folder may lie in a repository of its own; then it must be refused.
    if (verdict.ok) expect(verdict.repository).toBeUndefined();
    const broken = join(trusted, "broken");
    await mkdir(broken);
    await writeFile(join(broken, ".git"), `gitdir: ${join(base, "missing")}\n`);
    const refused = await refusal(broken);
    expect(refused.reason).toContain("is in a git repository git refuses to use");
  });

  it("follows symbolic links in the trusted list and in globs, and still refuses a folder outside it", async () => {
    const own = await repo(join(trusted, "own"));
    await symlink(trusted, join(base, "link-to-trusted"));
    expect(await checkTrust(own, [join(base, "link-to-trusted")])).toMatchObject({ ok: true });
    expect(await checkTrust(own, [`${join(base, "link-to-trusted")}/*`])).toMatchObject({ ok: true });
    // A glob names folders: what lies inside a matched folder is inside too.
    await mkdir(join(own, "sub"));
    expect(await checkTrust(join(own, "sub"), [`${join(base, "link-to-trusted")}/*`])).toMatchObject({
      ok: true,
    });
    const outside = await refusal(join(untrusted, "repo"), [`${join(base, "link-to-trusted")}/*`]);
    expect(outside.reason).toMatch(
      /is outside the trusted repos; if you mean to trust it, add it to dispatch.trusted_repos/,
    );
  });

  it("refuses a checkout that now belongs to another repository than the one the work was made in", async () => {
    const own = await repo(join(trusted, "own"));
    const other = await repo(join(trusted, "other"));
    const verdict = await checkTrust(own, [trusted], {
      sameRepositoryAs: join(other, ".git"),
      label: "the checkout",
    });
    expect(verdict).toMatchObject({ ok: false, refusal: { rule: "trusted-repos" } });
    if (!verdict.ok) {
      expect(verdict.refusal.reason).toContain(
        `the checkout ${own} now belongs to the git repository ${join(own, ".git")}`,
      );
      expect(verdict.refusal.reason).toContain(`not to ${join(other, ".git")} where the work was made`);
    }
  });
});

describe("folderOrRepositoryListed (plan_first_repos)", () => {
  it("covers a folder listed itself, and one whose .git leads into a listed repository", async () => {
    const guarded = await repo(join(trusted, "guarded"));
    const folder = join(trusted, "side-door");
    await mkdir(folder);
    await writeFile(join(folder, ".git"), `gitdir: ${join(guarded, ".git")}\n`);
    expect(await folderOrRepositoryListed(guarded, [guarded])).toBe(true);
    expect(await folderOrRepositoryListed(folder, [guarded])).toBe(true);
    expect(await folderOrRepositoryListed(join(untrusted, "repo"), [guarded])).toBe(false);
    expect(await folderOrRepositoryListed(folder, [])).toBe(false);
  });
});
