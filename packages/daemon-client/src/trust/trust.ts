import { realpath, stat } from "node:fs/promises";
import { dirname, join, sep } from "node:path";
import { expandHome } from "@gstack/contracts";
import picomatch from "picomatch";
import { type FolderRepository, findRepository, type Repository } from "./repository";

/**
 * Trust follows the repository. A dispatch's work is made from, and landed into, the repository
 * its folder belongs to, which a `.git` file, a `.git` link, a `commondir` file or
 * `core.worktree` can put anywhere. So a folder is trusted when it lies inside `trusted_repos`
 * and so does its repository: its checkout, its common git folder and its main checkout, every
 * path real (symbolic links followed), the list's too. Intake, each launch and each landing ask
 * here, and nowhere else.
 */

/** Why a folder is not trusted: the rule (as intake names it) and a sentence a person can act on. */
export interface TrustRefusal {
  rule: "project-dir" | "trusted-repos";
  reason: string;
  /** For a repository outside the list: the folders to add to trust it (its parts outside, outermost). */
  toTrust?: string[];
}

export type TrustVerdict =
  | { ok: true; folder: string; repository?: Repository }
  | { ok: false; refusal: TrustRefusal; repository?: Repository };

const GLOB = /[*?[\]{}]/;

/**
 * A test of real paths against a list of folders or globs (`~` expanded). A folder admits itself
 * and what lies inside it, once both are real. A glob names folders the same way: it admits a
 * path when the path or a folder above it matches, written as it is or with the folder before
 * its first wildcard made real. A folder that does not exist admits nothing.
 */
export async function listedPaths(
  entries: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<(path: string) => boolean> {
  const tests: Array<(path: string) => boolean> = [];
  for (const entry of entries) {
    const expanded = expandHome(entry, env);
    if (GLOB.test(expanded)) {
      const patterns = [expanded];
      const { base, glob } = picomatch.scan(expanded);
      const realBase = base ? await realpath(base).catch(() => undefined) : undefined;
      if (realBase !== undefined && realBase !== base) patterns.push(join(realBase, glob));
      const matches = picomatch(patterns, { dot: true });
      tests.push((path) => {
        for (let folder = path; ; folder = dirname(folder)) {
          if (matches(folder)) return true;
          if (dirname(folder) === folder) return false;
        }
      });
      continue;
    }
    const folder = await realpath(expanded).catch(() => undefined);
    if (folder === undefined) continue;
    tests.push((path) => isInside(path, folder));
  }
  return (path) => tests.some((test) => test(path));
}

/**
 * Whether `folder` (real) or any part of the repository it belongs to lies in `entries`: how a
 * policy listing repositories (`plan_first_repos`) finds the dispatches it covers, whichever
 * folder of the repository they name.
 */
export async function folderOrRepositoryListed(
  folder: string,
  entries: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<boolean> {
  if (entries.length === 0) return false;
  const listed = await listedPaths(entries, env);
  const real = await realpath(expandHome(folder, env)).catch(() => undefined);
  if (real === undefined) return false;
  if (listed(real)) return true;
  const found = await findRepository(real).catch(() => undefined);
  if (found?.kind !== "repository") return false;
  return repositoryParts(found).some((part) => listed(part.path));
}

/** What must be trusted of a repository, each with what a person calls it. */
function repositoryParts(repository: Repository): Array<{ name: string; path: string }> {
  const parts = [
    { name: "its checkout", path: repository.workTree },
    { name: "its git folder", path: repository.commonDir },
    { name: "its main checkout", path: repository.mainWorkTree },
  ];
  return parts.filter((part): part is { name: string; path: string } => part.path !== undefined);
}

export interface TrustOptions {
  /** Where `~` points; the process environment by default. */
  env?: NodeJS.ProcessEnv;
  /**
   * The common git folder the folder's repository had when the work was made: a repository found
   * now that is another one is refused, even a trusted one (the work is not there).
   */
  sameRepositoryAs?: string;
  /** What the folder is, in the refusal's sentence ("project_dir", "the checkout"). */
  label?: string;
}

/**
 * Judges a folder against `trusted_repos`: it must exist, lie inside the list once real, and
 * so must the repository it belongs to (checkout, common git folder, main checkout). A folder in
 * no repository is judged by itself (whether it may run without one is not trust's question);
 * one git refuses to use is refused, since where it leads cannot be told.
 */
export async function checkTrust(
  folder: string,
  trustedRepos: readonly string[],
  options: TrustOptions = {},
): Promise<TrustVerdict> {
  const env = options.env ?? process.env;
  const label = options.label ?? "project_dir";
  const refuse = (
    rule: TrustRefusal["rule"],
    reason: string,
    repository?: Repository,
    toTrust?: string[],
  ): TrustVerdict => ({
    ok: false,
    refusal: { rule, reason, ...(toTrust ? { toTrust } : {}) },
    ...(repository ? { repository } : {}),
  });
  let real: string;
  try {
    real = await realpath(expandHome(folder, env));
    if (!(await stat(real)).isDirectory()) return refuse("project-dir", `${label} ${folder} is not a folder`);
  } catch {
    return refuse("project-dir", `${label} ${folder} does not exist`);
  }
  if (trustedRepos.length === 0) {
    return refuse(
      "trusted-repos",
      "no trusted repos are configured; add the folder to dispatch.trusted_repos in config.yaml",
    );
  }
  const listed = await listedPaths(trustedRepos, env);
  if (!listed(real)) {
    return refuse(
      "trusted-repos",
      `${label} ${folder} (${real}) is outside the trusted repos; if you mean to trust it, add it to dispatch.trusted_repos in config.yaml`,
    );
  }
  let found: FolderRepository;
  try {
    found = await findRepository(real);
  } catch (error) {
    return refuse("project-dir", `${label} ${folder}: ${(error as Error).message}`);
  }
  if (found.kind === "none") return { ok: true, folder: real };
  if (found.kind === "unusable") {
    return refuse(
      "trusted-repos",
      `${label} ${folder} (${real}) is in a git repository git refuses to use (${found.reason}), so the repository its work would be made from and landed into cannot be told; fix or remove its .git`,
    );
  }
  const { kind: _kind, folder: _folder, ...repository } = found;
  const outside = repositoryParts(repository).filter((part) => !listed(part.path));
  if (outside.length > 0) {
    const named = outside.map((part) => `${part.name} ${part.path}`).join(", ");
    const toTrust = outermost(outside.map((part) => part.path));
    return refuse(
      "trusted-repos",
      `${label} ${folder} belongs to the git repository ${repositoryName(repository)} (${howItLeads(real, repository)}), which is outside the trusted repos (${named}). Trust follows the repository a dispatch's work is made from and landed into, not the folder named; if you mean to trust it, add ${toTrust.join(" and ")} to dispatch.trusted_repos in config.yaml`,
      repository,
      toTrust,
    );
  }
  if (options.sameRepositoryAs !== undefined && repository.commonDir !== options.sameRepositoryAs) {
    return refuse(
      "trusted-repos",
      `${label} ${folder} now belongs to the git repository ${repository.commonDir} (${howItLeads(real, repository)}), not to ${options.sameRepositoryAs} where the work was made; put its .git back, or discard the work`,
      repository,
    );
  }
  return { ok: true, folder: real, repository };
}

/** A repository as a person knows it: its main checkout, else the checkout in use, else its git folder. */
export function repositoryName(repository: Repository): string {
  return repository.mainWorkTree ?? repository.workTree ?? repository.commonDir;
}

/** How a folder (real) leads to its repository, in a few words. */
export function howItLeads(folder: string, repository: Repository): string {
  const steps: string[] = [];
  const at = repository.foundAt;
  // The `.git` found may be the folder's own or one of a folder above it.
  const whose = at === join(folder, ".git") ? "its" : "the";
  if (repository.via === "dot-git-file")
    steps.push(`${whose} .git file ${at} points to ${repository.gitDir}`);
  else if (repository.via === "dot-git-link")
    steps.push(`${whose} .git ${at} is a symbolic link to ${repository.gitDir}`);
  else if (repository.via === "inside-git-folder")
    steps.push(`it lies inside the git folder ${repository.gitDir}`);
  else if (at !== join(folder, ".git")) steps.push(`it lies in the checkout ${dirname(at)}`);
  else steps.push(`its .git folder is ${repository.gitDir}`);
  if (repository.commonDir !== repository.gitDir) steps.push(`whose commondir is ${repository.commonDir}`);
  if (
    repository.workTree !== undefined &&
    !isInside(folder, repository.workTree) &&
    repository.via !== "inside-git-folder"
  ) {
    steps.push(`whose core.worktree is ${repository.workTree}`);
  }
  return steps.join(", ");
}

function isInside(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

/** The paths not inside another of them, in order, once each. */
function outermost(paths: readonly string[]): string[] {
  const unique = [...new Set(paths)];
  return unique.filter((path) => !unique.some((other) => other !== path && isInside(path, other)));
}

/**
 * Resolves `project_dir` (`~` expanded, symbolic links followed) and checks that it is an
 * existing folder inside one of the trusted repos (folders or globs), and that so is the
 * repository it belongs to (see {@link checkTrust}). Returns the real path, or a refusal (audited by intake as `rejected`).
 */
export async function checkProjectDir(
  projectDir: string,
  trustedRepos: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ ok: true; path: string } | { ok: false; refusal: TrustRefusal & { event: "rejected" } }> {
  const verdict = await checkTrust(projectDir, trustedRepos, { env });
  if (!verdict.ok) return { ok: false, refusal: { ...verdict.refusal, event: "rejected" } };
  return { ok: true, path: verdict.folder };
}
