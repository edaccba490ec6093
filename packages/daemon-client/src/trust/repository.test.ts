import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import {
  type FolderRepository,
  findRepository,
  parseCoreSettings,
  repositoryFromFiles,
  repositoryFromGit,
} from "./repository";

let base: string;

beforeEach(async () => {
  // Real: git prints real paths, and the answers are compared with its own.
  base = await realpath(await mkdtemp(join(tmpdir(), "gstack-repository-")));
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

const gitEnv = () => {
  const env: NodeJS.ProcessEnv = { ...process.env, LC_ALL: "C" };
  for (const name of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX"])
    delete env[name];
  return env;
};

const git = (cwd: string, ...args: string[]) =>
  execFileSync(
    "git",
    ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always", ...args],
    {
      cwd,
      encoding: "utf8",
      env: gitEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    },
  ).trim();

/** A repository with one commit on `main`. */
async function repo(path: string): Promise<string> {
  await mkdir(path, { recursive: true });
  git(path, "init", "-q", "-b", "main");
  git(path, "commit", "-q", "--allow-empty", "-m", "start");
  return path;
}

/** What git itself answers in `folder`: the three paths, none, or that it refuses. */
type GitAnswer =
  | { kind: "repository"; gitDir: string; commonDir: string; workTree?: string }
  | { kind: "none" }
  | { kind: "unusable" };

function gitSays(folder: string): GitAnswer {
  const run = (...args: string[]) => {
    try {
      return { ok: true, out: git(folder, "rev-parse", "--path-format=absolute", ...args), err: "" };
    } catch (error) {
      const failed = error as { stdout?: string; stderr?: string };
      return { ok: false, out: String(failed.stdout ?? "").trim(), err: String(failed.stderr ?? "") };
    }
  };
  const dirs = run("--git-dir", "--git-common-dir");
  if (!dirs.ok)
    return /not a git repository \(or any/.test(dirs.err) ? { kind: "none" } : { kind: "unusable" };
  const [gitDir, commonDir] = dirs.out.split("\n") as [string, string];
  const top = run("--show-toplevel");
  if (!top.ok && !/must be run in a work tree/.test(top.err)) return { kind: "unusable" };
  return { kind: "repository", gitDir, commonDir, ...(top.ok ? { workTree: top.out } : {}) };
}

/** The part of an answer git can be asked about. */
function comparable(found: FolderRepository): GitAnswer {
  if (found.kind !== "repository") return { kind: found.kind };
  return {
    kind: "repository",
    gitDir: found.gitDir,
    commonDir: found.commonDir,
    ...(found.workTree !== undefined ? { workTree: found.workTree } : {}),
  };
}

/** The reader (when it answers), git through the daemon's parser, and the two together all agree with git. */
async function expectAgreement(folder: string): Promise<FolderRepository> {
  const truth = gitSays(folder);
  const fromFiles = await repositoryFromFiles(folder);
  if (fromFiles !== undefined) expect(comparable(fromFiles), `read from files in ${folder}`).toEqual(truth);
  expect(comparable(await repositoryFromGit(folder)), `from git in ${folder}`).toEqual(truth);
  const found = await findRepository(folder);
  expect(comparable(found), `found in ${folder}`).toEqual(truth);
  return found;
}

describe("findRepository agrees with git rev-parse --git-dir --git-common-dir --show-toplevel", () => {
  it("a plain repository, from its top, a subfolder and inside its git folder", async () => {
    const top = await repo(join(base, "plain"));
    await mkdir(join(top, "src", "deep"), { recursive: true });
    const found = await expectAgreement(top);
    expect(found).toMatchObject({
      kind: "repository",
      workTree: top,
      mainWorkTree: top,
      via: "dot-git-folder",
    });
    expect(await repositoryFromFiles(top)).toBeDefined();
    await expectAgreement(join(top, "src", "deep"));
    expect(await expectAgreement(join(top, ".git", "refs"))).toMatchObject({
      via: "inside-git-folder",
      mainWorkTree: top,
    });
  });

  it("a linked worktree made by git worktree add belongs to the main repository", async () => {
    const main = await repo(join(base, "main"));
    const linked = join(base, "elsewhere", "linked");
    git(main, "worktree", "add", "-q", "-b", "topic", linked);
    const found = await expectAgreement(linked);
    expect(found).toMatchObject({
      kind: "repository",
      commonDir: join(main, ".git"),
      gitDir: join(main, ".git", "worktrees", "linked"),
      workTree: linked,
      mainWorkTree: main,
      via: "dot-git-file",
    });
    expect(await repositoryFromFiles(linked)).toBeDefined();
  });

  it("a .git file with an absolute or a relative gitdir, into a repository or into its worktree's git folder", async () => {
    const other = await repo(join(base, "other"));
    git(other, "worktree", "add", "-q", "-b", "x", join(base, "x"));
    const cases: Array<[string, string]> = [
      ["absolute", `gitdir: ${join(other, ".git")}\n`],
      ["relative", "gitdir: ../../other/.git\n"],
      ["into-worktree", `gitdir: ${join(other, ".git", "worktrees", "x")}\n`],
      ["relative-into-worktree", "gitdir: ../../other/.git/worktrees/x\r\n"],
    ];
    for (const [name, text] of cases) {
      const folder = join(base, "trusted", name);
      await mkdir(folder, { recursive: true });
      await writeFile(join(folder, ".git"), text);
      const found = await expectAgreement(folder);
      expect(found, name).toMatchObject({
        commonDir: join(other, ".git"),
        workTree: folder,
        mainWorkTree: other,
      });
    }
  });

  it("a submodule, and a folder whose .git file points at a submodule's git folder (core.worktree)", async () => {
    const library = await repo(join(base, "library"));
    const superproject = await repo(join(base, "super"));
    git(superproject, "submodule", "add", "-q", library, "lib");
    const sub = join(superproject, "lib");
    const modules = join(superproject, ".git", "modules", "lib");
    expect(await expectAgreement(sub)).toMatchObject({
      commonDir: modules,
      workTree: sub,
      mainWorkTree: sub,
    });
    const stray = join(base, "stray");
    await mkdir(stray);
    await writeFile(join(stray, ".git"), `gitdir: ${modules}\n`);
    // git works in the submodule's checkout, whatever folder named its git folder.
    expect(await expectAgreement(stray)).toMatchObject({ commonDir: modules, workTree: sub });
  });

  it("a symbolic link to a checkout, and a .git that is a symbolic link to another repository's", async () => {
    const target = await repo(join(base, "target"));
    await mkdir(join(base, "links"));
    await symlink(target, join(base, "links", "to-target"));
    expect(await expectAgreement(join(base, "links", "to-target"))).toMatchObject({ workTree: target });
    const folder = join(base, "borrowed");
    await mkdir(folder);
    await symlink(join(target, ".git"), join(folder, ".git"));
    expect(await expectAgreement(folder)).toMatchObject({
      commonDir: join(target, ".git"),
      workTree: folder,
      mainWorkTree: target,
      via: "dot-git-link",
    });
    // Found by the layout property: a link into a worktree's git folder, whose commondir is
    // relative ("../.."), is followed as the kernel follows it (link first, then `..`).
    git(target, "worktree", "add", "-q", "-b", "side", join(base, "side"));
    const intoWorktree = join(base, "into-worktree");
    await mkdir(intoWorktree);
    await symlink(join(target, ".git", "worktrees", "side"), join(intoWorktree, ".git"));
    expect(await repositoryFromFiles(intoWorktree)).toMatchObject({ kind: "repository" });
    expect(await expectAgreement(intoWorktree)).toMatchObject({
      commonDir: join(target, ".git"),
      workTree: intoWorktree,
      via: "dot-git-link",
    });
  });

  it("bare repositories, core.bare, core.worktree and a git folder kept apart", async () => {
    const bare = join(base, "bare.git");
    git(base, "init", "-q", "--bare", bare);
    await mkdir(join(bare, "refs", "deep"), { recursive: true });
    expect(await expectAgreement(bare)).toMatchObject({ commonDir: bare, via: "inside-git-folder" });
    expect((await findRepository(bare)) as object).not.toHaveProperty("workTree");
    expect((await findRepository(bare)) as object).not.toHaveProperty("mainWorkTree");
    await expectAgreement(join(bare, "refs", "deep"));
    const pointer = join(base, "to-bare");
    await mkdir(pointer);
    await writeFile(join(pointer, ".git"), `gitdir: ${bare}\n`);
    await expectAgreement(pointer);

    const flagged = await repo(join(base, "flagged"));
    git(flagged, "config", "core.bare", "true");
    await mkdir(join(flagged, "sub"));
    await expectAgreement(join(flagged, "sub"));

    const moved = await repo(join(base, "moved"));
    const away = join(base, "away");
    await mkdir(away);
    git(moved, "config", "core.worktree", "../../away");
    expect(await expectAgreement(moved)).toMatchObject({ workTree: away, mainWorkTree: away });

    const apart = join(base, "apart");
    await mkdir(join(base, "store"));
    git(base, "init", "-q", "--separate-git-dir", join(base, "store", "apart.git"), apart);
    expect(await expectAgreement(apart)).toMatchObject({
      commonDir: join(base, "store", "apart.git"),
      workTree: apart,
    });
  });

  it("no repository, and .git files git refuses", async () => {
    const plain = join(base, "plain");
    await mkdir(plain);
    // The temporary folder may itself lie in some repository; git and the reader say the same either way.
    await expectAgreement(plain);
    const broken = join(base, "broken");
    await mkdir(broken);
    await writeFile(join(broken, ".git"), `gitdir: ${join(base, "missing")}\n`);
    expect(await expectAgreement(broken)).toMatchObject({ kind: "unusable" });
    await writeFile(join(broken, ".git"), "not a gitdir line\n");
    expect(await expectAgreement(broken)).toMatchObject({ kind: "unusable" });
    // Trailing spaces are part of the path for git.
    const target = await repo(join(base, "spaced"));
    await writeFile(join(broken, ".git"), `gitdir: ${join(target, ".git")}  \n`);
    expect(await expectAgreement(broken)).toMatchObject({ kind: "unusable" });
  });

  it("a hand-made worktree git folder whose commondir leads into another repository", async () => {
    const victim = await repo(join(base, "victim"));
    const own = join(base, "decoy", "gitdir");
    await mkdir(own, { recursive: true });
    await writeFile(join(own, "HEAD"), "ref: refs/heads/main\n");
    await writeFile(join(own, "commondir"), `${relative(own, join(victim, ".git"))}\n`);
    const folder = join(base, "decoy", "checkout");
    await mkdir(folder);
    await writeFile(join(folder, ".git"), `gitdir: ${own}\n`);
    expect(await expectAgreement(folder)).toMatchObject({
      gitDir: own,
      commonDir: join(victim, ".git"),
      workTree: folder,
      mainWorkTree: victim,
    });
  });
});

describe("parseCoreSettings", () => {
  it("reads core.bare and core.worktree as git's set-up does, and gives up on what it does not follow", () => {
    expect(parseCoreSettings("[core]\n\tbare = false\n\tworktree = ../x\n")).toEqual({
      bare: false,
      worktree: "../x",
    });
    expect(parseCoreSettings("[Core] Bare\n")).toEqual({ bare: true });
    expect(parseCoreSettings('[core "sub"]\n\tbare = true\n[other]\n\tworktree = y\n')).toEqual({
      bare: false,
    });
    expect(parseCoreSettings("[core]\n\tbare = yes ; comment\n")).toEqual({ bare: true });
    expect(parseCoreSettings('[core]\n\tworktree = "quoted"\n')).toBeUndefined();
    expect(parseCoreSettings("[core]\n\tbare = maybe\n")).toBeUndefined();
    expect(parseCoreSettings("[core]\n\tworktree = a\\\nb\n")).toBeUndefined();
    expect(parseCoreSettings("[extensions]\n\tworktreeConfig = true\n")).toBeUndefined();
    expect(parseCoreSettings("bare = true\n")).toBeUndefined();
  });
});

/** A generated layout: repositories of several kinds, folders pointing into them, and a folder to ask about. */
const layoutArbitrary = fc.record({
  repos: fc.array(
    fc.record({
      kind: fc.constantFrom("plain", "bare", "apart"),
      config: fc.constantFrom("none", "worktree-absolute", "worktree-relative", "bare-true", "bare-false"),
      linked: fc.integer({ min: 0, max: 2 }),
    }),
    { minLength: 1, maxLength: 2 },
  ),
  pointers: fc.array(
    fc.record({
      target: fc.nat(),
      form: fc.constantFrom("absolute", "relative", "dot-git-link", "folder-link", "missing"),
    }),
    { maxLength: 3 },
  ),
  ask: fc.nat(),
  sub: fc.constantFrom("", "a", "a/b", ".git", ".git/refs"),
});

describe("findRepository on generated layouts", () => {
  it(
    "agrees with git, and names the main checkout the layout was built with",
    async () => {
      let round = 0;
      await fc.assert(
        fc.asyncProperty(layoutArbitrary, async (layout) => {
          round += 1;
          const root = join(base, `layout-${round}`);
          await mkdir(root);
          /** Git folders to point at, and folders to ask about, with the main checkout expected. */
          const gitDirs: string[] = [];
          const folders: Array<{ path: string; main?: string }> = [];
          for (const [index, spec] of layout.repos.entries()) {
            const elsewhere = join(root, `elsewhere-${index}`);
            await mkdir(elsewhere);
            let common: string;
            let checkout: string | undefined;
            if (spec.kind === "plain") {
              checkout = await repo(join(root, `repo-${index}`));
              common = join(checkout, ".git");
            } else if (spec.kind === "apart") {
              checkout = join(root, `apart-${index}`);
              common = join(root, "store", `apart-${index}.git`);
              await mkdir(join(root, "store"), { recursive: true });
              git(root, "init", "-q", "-b", "main", "--separate-git-dir", common, checkout);
              git(checkout, "commit", "-q", "--allow-empty", "-m", "start");
            } else {
              const seed = await repo(join(root, `seed-${index}`));
              common = join(root, `bare-${index}.git`);
              git(root, "clone", "-q", "--bare", seed, common);
            }
            const linked: string[] = [];
            for (let k = 0; k < spec.linked; k += 1) {
              const path = join(root, `linked-${index}-${k}`);
              git(common, "worktree", "add", "-q", "-b", `b${k}`, path, "main");
              linked.push(path);
              gitDirs.push(join(common, "worktrees", `linked-${index}-${k}`));
            }
            if (spec.config === "worktree-absolute") git(common, "config", "core.worktree", elsewhere);
            if (spec.config === "worktree-relative")
              git(common, "config", "core.worktree", relative(common, elsewhere));
            if (spec.config === "bare-true") git(common, "config", "core.bare", "true");
            if (spec.config === "bare-false") git(common, "config", "core.bare", "false");
            // What the layout was built to have as its main checkout: none when bare (a bare clone
            // is, unless core.bare is set false), else core.worktree, else the folder holding .git.
            const bare =
              (spec.kind === "bare" && spec.config !== "bare-false") || spec.config === "bare-true";
            const main = bare
              ? undefined
              : spec.config.startsWith("worktree")
                ? elsewhere
                : spec.kind === "plain"
                  ? checkout
                  : undefined;
            gitDirs.push(common);
            if (checkout) folders.push({ path: checkout, ...(main ? { main } : {}) });
            folders.push({ path: common, ...(main ? { main } : {}) });
            for (const path of linked) folders.push({ path, ...(main ? { main } : {}) });
          }
          for (const [index, pointer] of layout.pointers.entries()) {
            const folder = join(root, "pointers", `p-${index}`);
            await mkdir(join(root, "pointers"), { recursive: true });
            const target = gitDirs[pointer.target % gitDirs.length] as string;
            if (pointer.form === "folder-link") {
              const to = folders[pointer.target % folders.length]?.path as string;
              await symlink(to, folder);
            } else {
              await mkdir(folder);
              if (pointer.form === "dot-git-link") await symlink(target, join(folder, ".git"));
              else {
                const path =
                  pointer.form === "missing"
                    ? join(root, "missing")
                    : pointer.form === "relative"
                      ? relative(folder, target)
                      : target;
                await writeFile(join(folder, ".git"), `gitdir: ${path}\n`);
              }
            }
            folders.push({ path: folder });
          }
          const chosen = folders[layout.ask % folders.length] as { path: string; main?: string };
          let asked = join(chosen.path, layout.sub);
          // A subfolder that cannot be made (under a .git file) is asked about as its folder.
          asked = await mkdir(asked, { recursive: true }).then(
            () => asked,
            () => chosen.path,
          );
          const found = await expectAgreement(asked).catch(async (error: unknown) => {
            // Print the layout that disagreed, so it can be pinned as an example.
            throw new Error(`${String(error)}\nlayout ${JSON.stringify(layout)} asked in ${asked}`);
          });
          const pointerFolder = asked.includes(`${join(root, "pointers")}/`);
          if (found.kind === "repository" && !pointerFolder) {
            expect(found.mainWorkTree, `main checkout for ${asked}`).toBe(chosen.main);
          }
        }),
        { numRuns: Number(process.env.LAYOUT_RUNS ?? 25) },
      );
    },
    loadBudget(240_000),
  );
});
