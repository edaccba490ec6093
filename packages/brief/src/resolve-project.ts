import { execFile } from "node:child_process";
import type { Dirent } from "node:fs";
import { access, readdir } from "node:fs/promises";
import { basename, join, resolve } from "node:path";
import { promisify } from "node:util";
import { expandHome, gstackLayout, isSafeName, projectSlug, sanitizeSlug } from "@gstack/contracts";

const run = promisify(execFile);

/** A project name as the person said it, matched against the projects this machine knows. */
export type ProjectMatch =
  | { ok: true; project: string }
  | { ok: false; reason: "ambiguous"; candidates: string[] }
  | { ok: false; reason: "unknown"; name: string };

/**
 * Finds the gstack project a person means by `name`: a known slug exactly (any case); else the one
 * known slug that ends in `-{name}` (gstack names a project `owner-repo`, people say `repo`); else
 * the one known folder called `name`. Two candidates are ambiguous and both are named; none at all
 * is unknown, and the brief then says so rather than guessing.
 */
export function matchProject(
  name: string,
  known: readonly string[],
  folders: ReadonlyMap<string, string> = new Map(),
): ProjectMatch {
  const wanted = name.trim().toLowerCase();
  const exact = known.filter((slug) => slug.toLowerCase() === wanted);
  if (exact.length === 1) return { ok: true, project: exact[0]! };
  if (exact.length > 1) return exact.includes(name) ? { ok: true, project: name } : ambiguous(exact);
  const suffixed = unique(known.filter((slug) => slug.toLowerCase().endsWith(`-${wanted}`)));
  if (suffixed.length === 1) return { ok: true, project: suffixed[0]! };
  if (suffixed.length > 1) return ambiguous(suffixed);
  const byFolder = unique(
    [...folders.entries()]
      .filter(([folder]) => basename(folder).toLowerCase() === wanted)
      .map(([, slug]) => slug),
  );
  if (byFolder.length === 1) return { ok: true, project: byFolder[0]! };
  if (byFolder.length > 1) return ambiguous(byFolder);
  return { ok: false, reason: "unknown", name };
}

function ambiguous(candidates: string[]): ProjectMatch {
  return { ok: false, reason: "ambiguous", candidates: unique(candidates).sort() };
}

function unique<T>(values: readonly T[]): T[] {
  return [...new Set(values)];
}

/** The project slugs with a folder under `projects/` of the gstack state root. */
export async function knownProjects(root: string): Promise<string[]> {
  try {
    const entries = await readdir(gstackLayout(root).projects, { withFileTypes: true });
    return entries
      .filter((entry) => entry.isDirectory() && isSafeName(entry.name))
      .map((entry) => entry.name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}

/** The `origin` remote of the repository a folder is in, if it has one. */
async function originOf(folder: string): Promise<string | undefined> {
  try {
    const { stdout } = await run("git", ["-C", folder, "remote", "get-url", "origin"], { timeout: 10_000 });
    const url = stdout.trim();
    return url.length > 0 ? url : undefined;
  } catch {
    return undefined;
  }
}

/** gstack's slug of a folder: from its `origin` remote, else its name (as gstack derives it). */
export async function slugOfFolder(folder: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const absolute = resolve(expandHome(folder, env));
  const originUrl = await originOf(absolute);
  return projectSlug({ folder: absolute, ...(originUrl ? { originUrl } : {}) });
}

/**
 * The slugs of the repositories under the trusted folders: a trusted folder that is a repository,
 * or the repositories directly inside one that is not (a folder of checkouts such as `~/code`).
 * Globs are skipped: they name many folders, none in particular.
 */
export async function trustedFolders(
  trusted: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Map<string, string>> {
  const folders = new Map<string, string>();
  for (const entry of trusted) {
    if (/[*?[\]{}]/.test(entry)) continue;
    const folder = resolve(expandHome(entry, env));
    const repositories = (await isRepository(folder)) ? [folder] : await repositoriesIn(folder);
    for (const repository of repositories) folders.set(repository, await slugOfFolder(repository, env));
  }
  return folders;
}

async function isRepository(folder: string): Promise<boolean> {
  try {
    await access(join(folder, ".git"));
    return true;
  } catch {
    return false;
  }
}

async function repositoriesIn(folder: string): Promise<string[]> {
  let entries: Dirent[];
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const entry of entries) {
    if (!entry.isDirectory() || entry.name.startsWith(".")) continue;
    const child = join(folder, entry.name);
    if (await isRepository(child)) found.push(child);
  }
  return found.sort();
}

/** A name as a slug can hold it (what a brief looks up for a project never seen). */
export function slugOfName(name: string): string | undefined {
  const slug = sanitizeSlug(name.trim());
  return isSafeName(slug) ? slug : undefined;
}
