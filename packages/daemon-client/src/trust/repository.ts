import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, lstat, open, readFile, readlink, realpath, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join } from "node:path";

/**
 * The git repository a folder belongs to, found the way git finds it. Every path is real
 * (symbolic links followed), as `git rev-parse --path-format=absolute` prints them.
 */
export interface Repository {
  /** The git folder git uses for the folder (`--git-dir`): a linked worktree's own, else the common one. */
  gitDir: string;
  /** The repository's common git folder (`--git-common-dir`): its objects and refs, where branches are made and landed. */
  commonDir: string;
  /**
   * The checkout git works in for the folder (`--show-toplevel`), which `core.worktree` may put
   * elsewhere; absent when there is none (a bare repository, or a folder inside the git folder).
   */
  workTree?: string;
  /**
   * The repository's own (main) checkout as its common git folder tells it: `core.worktree`, else
   * the folder holding a common folder named `.git`; absent for a bare repository, or a git
   * folder kept apart from its checkout (which only the checkout's `.git` file knows).
   */
  mainWorkTree?: string;
  /** The `.git` (folder, file or link) git found, or the git folder itself when the folder lies in one. */
  foundAt: string;
  /** How: a `.git` folder, a `.git` file (`gitdir: …`), a `.git` symbolic link, or the folder lying inside a git folder. */
  via: "dot-git-folder" | "dot-git-file" | "dot-git-link" | "inside-git-folder";
}

/** What a folder belongs to: a repository, none (git finds no `.git` up to the root or a mount point), or one git refuses. */
export type FolderRepository =
  | ({ kind: "repository"; folder: string } & Repository)
  | { kind: "none"; folder: string }
  | { kind: "unusable"; folder: string; reason: string };

/**
 * The repository `folder` belongs to, as git would answer it there: read from the files git reads
 * (no process) when the layout is one the reader knows, else from `git rev-parse`. Throws only when
 * the folder itself cannot be resolved (it does not exist).
 */
export async function findRepository(folder: string): Promise<FolderRepository> {
  const fromFiles = await repositoryFromFiles(folder);
  // "No repository" lets a folder be judged on its own, so the reader is never believed there:
  // git confirms it (a folder outside any repository is rare for a dispatch).
  if (fromFiles?.kind === "repository") return fromFiles;
  return repositoryFromGit(folder);
}

/** Variables that change how git finds a repository; with any of them set, git is asked. */
const DISCOVERY_VARIABLES = [
  "GIT_CEILING_DIRECTORIES",
  "GIT_DISCOVERY_ACROSS_FILESYSTEM",
  "GIT_OBJECT_DIRECTORY",
  "GIT_CONFIG_PARAMETERS",
  "GIT_CONFIG_COUNT",
];

/**
 * The repository of `folder` from the files git reads, as git's own discovery walks them: from the
 * folder's real path up to the root (not across a mount point), at each folder a `.git` (a git
 * folder, or a file `gitdir: <path>`, relative to the file's folder) or the folder being a git
 * folder itself; then the git folder's `commondir` file, and `core.bare` / `core.worktree` in the
 * repository's `config` (which git ignores for a linked worktree). Undefined whenever something
 * is not the usual shape (an unreadable file, a `.git` git would refuse, a config line the reader
 * does not follow, a variable that changes discovery): then git must answer.
 */
export async function repositoryFromFiles(
  folder: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<FolderRepository | undefined> {
  if (DISCOVERY_VARIABLES.some((name) => env[name] !== undefined)) return undefined;
  const start = await realpath(folder);
  try {
    const device = (await stat(start)).dev;
    let dir = start;
    for (;;) {
      const dotGit = join(dir, ".git");
      const info = await stat(dotGit).catch((error: NodeJS.ErrnoException) => {
        if (error.code === "ENOENT" || error.code === "ENOTDIR") return null;
        throw error;
      });
      if (info?.isFile()) {
        const target = await gitfileTarget(dotGit);
        if (target === undefined) return undefined;
        const path = isAbsolute(target) ? target : under(dir, target);
        if (!(await isGitFolder(path))) return undefined;
        return await discovered(start, await realpath(path), dir, dotGit, "dot-git-file");
      }
      if (info?.isDirectory() && (await isGitFolder(dotGit))) {
        const link = (await lstat(dotGit)).isSymbolicLink();
        return await discovered(
          start,
          await realpath(dotGit),
          dir,
          dotGit,
          link ? "dot-git-link" : "dot-git-folder",
        );
      }
      if (await isGitFolder(dir)) return await discovered(start, dir, undefined, dir, "inside-git-folder");
      const parent = dirname(dir);
      if (parent === dir) return { kind: "none", folder: start };
      // git stops at a mount point (GIT_DISCOVERY_ACROSS_FILESYSTEM is not set).
      if ((await stat(parent)).dev !== device) return { kind: "none", folder: start };
      dir = parent;
    }
  } catch {
    return undefined;
  }
}

/**
 * The repository around the git folder found: its common folder, and where git works. `checkout`
 * is the folder holding the `.git` found (undefined when the folder lies in a git folder).
 */
async function discovered(
  folder: string,
  gitDir: string,
  checkout: string | undefined,
  foundAt: string,
  via: Repository["via"],
): Promise<FolderRepository | undefined> {
  // git refuses a repository someone else owns (safe.directory may allow it): git must answer.
  if (!(await ownedByUs([checkout, via === "dot-git-file" ? foundAt : undefined, gitDir]))) return undefined;
  const common = await readCommondir(gitDir);
  if (common === undefined) return undefined;
  const commonDir = common.linked ? await realpath(common.path) : gitDir;
  let workTree = checkout;
  if (!common.linked) {
    // A linked worktree's git folder ignores core.bare and core.worktree of the shared config.
    const core = await readCoreSettings(gitDir);
    if (core === undefined) return undefined;
    if (core.bare) workTree = undefined;
    else if (core.worktree !== undefined) {
      const path = await physicalPath(gitDir, core.worktree);
      if (path === undefined) return undefined;
      workTree = path;
    }
  }
  const main = await mainWorkTreeOf(commonDir);
  if (main === null) return undefined;
  return {
    kind: "repository",
    folder,
    gitDir,
    commonDir,
    ...(workTree !== undefined ? { workTree } : {}),
    ...(main !== undefined ? { mainWorkTree: main } : {}),
    foundAt,
    via,
  };
}

/** Whether every path given is owned by the user the daemon runs as, as git's ownership check wants. */
async function ownedByUs(paths: ReadonlyArray<string | undefined>): Promise<boolean> {
  const uid = process.geteuid?.();
  if (uid === undefined) return true;
  // root under sudo is judged by SUDO_UID in git: leave that to git.
  if (uid === 0 && process.env.SUDO_UID !== undefined) return false;
  for (const path of paths) {
    if (path !== undefined && (await lstat(path)).uid !== uid) return false;
  }
  return true;
}

/**
 * The main checkout of the repository whose common git folder is `commonDir`: undefined when it
 * has none (or cannot tell), null when its config is one the reader does not follow.
 */
async function mainWorkTreeOf(commonDir: string): Promise<string | undefined | null> {
  const core = await readCoreSettings(commonDir);
  if (core === undefined) return null;
  if (core.bare) return undefined;
  if (core.worktree !== undefined) return (await physicalPath(commonDir, core.worktree)) ?? null;
  return basename(commonDir) === ".git" ? dirname(commonDir) : undefined;
}

/** `path` as git resolves it from `base` (a relative one by changing into `base` first): real, or undefined when missing. */
async function physicalPath(base: string, path: string): Promise<string | undefined> {
  // realpath(3) follows each part as it goes, `..` included, as chdir does; join would not.
  return realpath(isAbsolute(path) ? path : under(base, path)).catch(() => undefined);
}

/**
 * `name` under `folder` as the kernel reads it: each `..` taken after the link before it is
 * followed, as git's own paths are. (`path.join` would drop `link/..` before looking.)
 */
function under(folder: string, name: string): string {
  return folder.endsWith("/") ? `${folder}${name}` : `${folder}/${name}`;
}

/** The largest `.git` file git reads. */
const MAX_GITFILE_BYTES = 1024 * 1024;

/** The path a `.git` file names, as git reads it: `gitdir: <path>`, trailing line ends dropped; undefined otherwise. */
async function gitfileTarget(dotGit: string): Promise<string | undefined> {
  const text = await readBounded(dotGit, MAX_GITFILE_BYTES);
  if (text === undefined) return undefined;
  const trimmed = text.replace(/[\r\n]+$/, "");
  if (!trimmed.startsWith("gitdir: ")) return undefined;
  const target = trimmed.slice("gitdir: ".length);
  // git would take a path with a line break or a NUL in it literally and then fail: let it say so.
  return target.length > 0 && !/[\r\n\0]/.test(target) ? target : undefined;
}

/** A git folder's `commondir` file: the common folder it names (not yet resolved), or none. */
async function readCommondir(gitDir: string): Promise<{ linked: boolean; path: string } | undefined> {
  let text: string;
  try {
    text = await readFile(under(gitDir, "commondir"), "utf8");
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? { linked: false, path: gitDir } : undefined;
  }
  const target = text.replace(/[\r\n]+$/, "");
  if (target.length === 0 || /[\r\n\0]/.test(target)) return undefined;
  return { linked: true, path: isAbsolute(target) ? target : under(gitDir, target) };
}

/**
 * Whether git takes `suspect` for a git folder (its `is_git_directory`): a `HEAD` that is a
 * symbolic ref or a commit id, and `objects` and `refs` in its common folder.
 */
async function isGitFolder(suspect: string): Promise<boolean> {
  if (!(await validHead(under(suspect, "HEAD")))) return false;
  const common = await readCommondir(suspect);
  // git stops on a `commondir` it cannot read; so does the reader (git is asked instead).
  if (common === undefined) throw new Error(`${suspect}/commondir is not one the reader follows`);
  try {
    await access(under(common.path, "objects"), constants.X_OK);
    await access(under(common.path, "refs"), constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function validHead(path: string): Promise<boolean> {
  try {
    if ((await lstat(path)).isSymbolicLink()) return (await readlink(path)).startsWith("refs/");
    // git reads the first 255 bytes, whatever the file's size.
    const text = await readBounded(path, 255, true);
    if (text === undefined) return false;
    if (text.startsWith("ref:") && /^ref:\s*refs\//.test(text)) return true;
    return /^[0-9a-f]{40}/i.test(text);
  } catch {
    return false;
  }
}

/** A regular file's text, at most `maxBytes` (a larger one is undefined, or with `head` its beginning). */
async function readBounded(path: string, maxBytes: number, head = false): Promise<string | undefined> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => undefined);
  if (!handle) return undefined;
  try {
    const info = await handle.stat();
    if (!info.isFile() || (info.size > maxBytes && !head)) return undefined;
    const buffer = Buffer.alloc(Math.min(info.size, maxBytes));
    const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0);
    return buffer.subarray(0, bytesRead).toString("utf8");
  } finally {
    await handle.close();
  }
}

/** `core.bare` and `core.worktree` as git's repository set-up reads them from `config` (no includes). */
interface CoreSettings {
  bare: boolean;
  worktree?: string;
}

/**
 * `core.bare` and `core.worktree` of the repository config in `gitDir`, read as git's set-up reads
 * them (the file alone: include directives are not followed there). Undefined when a line is one
 * this reader does not follow (a quoted or escaped value, a continued line, a boolean git would
 * refuse): then git must answer.
 */
export async function readCoreSettings(gitDir: string): Promise<CoreSettings | undefined> {
  let text: string;
  try {
    text = await readFile(under(gitDir, "config"), "utf8");
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? { bare: false } : undefined;
  }
  return parseCoreSettings(text);
}

const SECTION = /^\[\s*([A-Za-z0-9.-]+)(?:\s+"(?:[^"\\\n]|\\.)*")?\s*\]/;
const ENTRY = /^([A-Za-z][A-Za-z0-9-]*)\s*(?:=(.*))?$/;

/** The core settings of a config file's text; undefined for text the reader does not follow. */
export function parseCoreSettings(text: string): CoreSettings | undefined {
  const settings: CoreSettings = { bare: false };
  let section: string | undefined;
  let inCore = false;
  for (const raw of text.replace(/^\uFEFF/, "").split("\n")) {
    let line = raw.replace(/\r$/, "").trim();
    // A continued line, or quotes that do not pair up: git's own parser must judge it.
    if (line.endsWith("\\")) return undefined;
    if ((line.replace(/\\./g, "").match(/"/g)?.length ?? 0) % 2 === 1) return undefined;
    for (;;) {
      if (line === "" || line.startsWith("#") || line.startsWith(";")) break;
      if (line.startsWith("[")) {
        const header = SECTION.exec(line);
        if (!header?.[1]) return undefined;
        section = header[1].toLowerCase();
        // Repository format extensions can make git refuse the repository or read more files.
        if (section === "extensions") return undefined;
        inCore = header[0].includes('"') ? false : section === "core";
        line = line.slice(header[0].length).trim();
        continue;
      }
      const entry = ENTRY.exec(line);
      if (!entry?.[1] || section === undefined) return undefined;
      const key = entry[1].toLowerCase();
      const value = entry[2];
      if (value !== undefined && /["\\]/.test(value)) {
        if (inCore && (key === "bare" || key === "worktree")) return undefined;
        // Another key's quoted value may hide a `#` or `;`; it cannot end the section.
        break;
      }
      const plain = value?.replace(/\s*[#;].*$/, "").trim();
      if (inCore && key === "repositoryformatversion" && plain !== "0" && plain !== "1") return undefined;
      if (inCore && key === "bare") {
        const flag = parseBoolean(plain);
        if (flag === undefined) return undefined;
        settings.bare = flag;
      } else if (inCore && key === "worktree") {
        if (plain === undefined || plain === "") return undefined;
        settings.worktree = plain;
      }
      break;
    }
  }
  return settings;
}

function parseBoolean(value: string | undefined): boolean | undefined {
  if (value === undefined) return true;
  const lower = value.toLowerCase();
  if (["true", "yes", "on"].includes(lower)) return true;
  if (["false", "no", "off", ""].includes(lower)) return false;
  if (/^-?\d+$/.test(lower)) return Number(lower) !== 0;
  return undefined;
}

/**
 * The repository of `folder` as `git rev-parse --path-format=absolute --git-dir
 * --git-common-dir --show-toplevel` answers there, in the environment the daemon runs git in.
 */
export async function repositoryFromGit(folder: string): Promise<FolderRepository> {
  const start = await realpath(folder);
  const out = await revParse(start, [
    "--path-format=absolute",
    "--git-dir",
    "--git-common-dir",
    "--show-toplevel",
  ]);
  const lines = out.stdout.split("\n").filter((line) => line.length > 0);
  if (!out.ok && /not a git repository \(or any/.test(out.stderr)) return { kind: "none", folder: start };
  const noWorkTree = !out.ok && /must be run in a work tree/.test(out.stderr);
  const [gitDir, commonDir, top] = lines;
  if ((!out.ok && !noWorkTree) || !gitDir || !commonDir || (out.ok && !top)) {
    const reason = out.stderr.split("\n").find((line) => line.trim().length > 0) ?? `git exited ${out.code}`;
    return { kind: "unusable", folder: start, reason: reason.replace(/^fatal: /, "") };
  }
  let main = await mainWorkTreeOf(commonDir);
  if (main === null) {
    // A config the reader does not follow: git, in the common folder, says where it works.
    const there = await revParse(commonDir, ["--path-format=absolute", "--show-toplevel"]);
    main = there.ok ? there.stdout.trim() || undefined : undefined;
  }
  const found = await nearestDotGit(start);
  return {
    kind: "repository",
    folder: start,
    gitDir,
    commonDir,
    ...(out.ok && top ? { workTree: top } : {}),
    ...(main !== undefined ? { mainWorkTree: main } : {}),
    foundAt: found?.path ?? gitDir,
    via: found?.via ?? "inside-git-folder",
  };
}

/** The nearest `.git` from `folder` up, and what it is (for saying how a folder leads to its repository). */
async function nearestDotGit(folder: string): Promise<{ path: string; via: Repository["via"] } | undefined> {
  for (let dir = folder; ; dir = dirname(dir)) {
    const path = join(dir, ".git");
    const info = await lstat(path).catch(() => undefined);
    if (info) {
      if (info.isSymbolicLink()) return { path, via: "dot-git-link" };
      return { path, via: info.isFile() ? "dot-git-file" : "dot-git-folder" };
    }
    if (dirname(dir) === dir) return undefined;
  }
}

function revParse(
  cwd: string,
  args: string[],
): Promise<{ ok: boolean; code: number; stdout: string; stderr: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, LC_ALL: "C", LANGUAGE: "C", GIT_TERMINAL_PROMPT: "0" };
  // As the daemon's own git commands run: never pointed elsewhere by the environment.
  for (const name of ["GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_PREFIX"])
    delete env[name];
  return new Promise((resolve) => {
    execFile("git", ["rev-parse", ...args], { cwd, env, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ ok: !error, code, stdout: String(stdout), stderr: String(stderr || error?.message || "") });
    });
  });
}
