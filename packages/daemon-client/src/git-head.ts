import { readFile, stat } from "node:fs/promises";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { exists } from "./exists";

/** Where HEAD points, read from the repository's files: its commit (none before the first) and branch. */
export interface HeadFromFiles {
  commit?: string;
  branch?: string;
}

const SHA = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/**
 * HEAD of the repository containing `cwd`, read from `.git` without starting git: the
 * `.git` folder or `gitdir:` file (worktrees and submodules), `HEAD`, the loose ref, then
 * `packed-refs`. Returns undefined whenever the layout is one this reader does not know
 * (reftable, a symbolic ref to a symbolic ref, anything unexpected), so the caller asks git;
 * `{}` means "not a repository" only when no `.git` exists up to the root.
 */
export async function readHeadFromFiles(cwd: string): Promise<HeadFromFiles | undefined> {
  try {
    const gitDir = await findGitDir(resolve(cwd));
    if (gitDir === null) return undefined;
    const common = await commonDir(gitDir);
    if (await exists(join(common, "reftable"))) return undefined;
    const head = (await readFile(join(gitDir, "HEAD"), "utf8")).trim();
    if (SHA.test(head)) return { commit: head };
    const match = /^ref: (refs\/heads\/[^\s]+)$/.exec(head);
    if (!match?.[1]) return undefined;
    const ref = match[1];
    const branch = ref.slice("refs/heads/".length);
    const loose = await readFile(join(common, ref), "utf8").then(
      (text) => text.trim(),
      () => undefined,
    );
    if (loose !== undefined) return SHA.test(loose) ? { commit: loose, branch } : undefined;
    const packed = await readFile(join(common, "packed-refs"), "utf8").catch(() => "");
    for (const line of packed.split("\n")) {
      const space = line.indexOf(" ");
      if (space > 0 && line.slice(space + 1) === ref) {
        const sha = line.slice(0, space);
        return SHA.test(sha) ? { commit: sha, branch } : undefined;
      }
    }
    return { branch };
  } catch {
    return undefined;
  }
}

/** The git dir of the repository containing `start`: null when the reader should not guess. */
async function findGitDir(start: string): Promise<string | null> {
  let folder = start;
  for (;;) {
    const dotGit = join(folder, ".git");
    const info = await stat(dotGit).catch(() => undefined);
    if (info?.isDirectory()) return dotGit;
    if (info?.isFile()) {
      const match = /^gitdir: (.+)$/m.exec(await readFile(dotGit, "utf8"));
      if (!match?.[1]) return null;
      const target = match[1].trim();
      return isAbsolute(target) ? target : resolve(folder, target);
    }
    const parent = dirname(folder);
    // No repository up to the root, or GIT_DIR and friends in play: let git answer.
    if (parent === folder) return null;
    folder = parent;
  }
}

async function commonDir(gitDir: string): Promise<string> {
  const text = await readFile(join(gitDir, "commondir"), "utf8").catch(() => undefined);
  if (text === undefined) return gitDir;
  const target = text.trim();
  return isAbsolute(target) ? target : resolve(gitDir, target);
}
