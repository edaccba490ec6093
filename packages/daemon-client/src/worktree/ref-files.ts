import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

/*
 * Branch tips read from git's own files, without starting git: what `status` needs to see
 * whether a finished dispatch's branch (or the one it lands into) moved since it was measured.
 * Only the plain layout is read (loose refs, then packed-refs, in the repository's common
 * folder); anything else (the reftable format, a symbolic ref, a file that is not one ref) makes
 * it answer undefined, and the caller asks git. A property test holds it to
 * `git for-each-ref` (`branchTips`).
 */

const SHA = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

/** The common git folder of the checkout at `repo` (its own `.git`, or the one it points to). */
function commonFolder(repo: string): string | undefined {
  const dotGit = join(repo, ".git");
  let gitDir: string;
  try {
    const pointer = /^gitdir: (.+)$/m.exec(readFileSync(dotGit, "utf8"))?.[1]?.trim();
    if (!pointer) return undefined;
    gitDir = resolve(repo, pointer);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EISDIR") return undefined;
    gitDir = dotGit;
  }
  try {
    return resolve(gitDir, readFileSync(join(gitDir, "commondir"), "utf8").trim());
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? gitDir : undefined;
  }
}

/**
 * The tips of the branches `refs` (full names, `refs/heads/…`) of the repository checked out at
 * `repo`, by full name; a branch that does not exist is absent. Undefined when the files are not
 * in the plain layout this reads: then git must be asked.
 */
export function branchTipsFromFiles(repo: string, refs: Iterable<string>): Map<string, string> | undefined {
  const common = commonFolder(repo);
  if (!common || existsSync(join(common, "reftable")) || !existsSync(join(common, "HEAD"))) return undefined;
  let packed: Map<string, string> | undefined;
  const tips = new Map<string, string>();
  for (const ref of refs) {
    if (!ref.startsWith("refs/heads/") || tips.has(ref)) continue;
    let loose: string | undefined;
    try {
      loose = readFileSync(join(common, ref), "utf8");
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR" && code !== "EISDIR") return undefined;
    }
    if (loose !== undefined) {
      const sha = loose.endsWith("\n") ? loose.slice(0, -1) : loose;
      if (!SHA.test(sha)) return undefined; // A symbolic ref, or something git reads otherwise.
      tips.set(ref, sha);
      continue;
    }
    packed ??= packedRefs(common);
    if (!packed) return undefined;
    const sha = packed.get(ref);
    if (sha) tips.set(ref, sha);
  }
  return tips;
}

/** The branches in `packed-refs`, by full name (empty when there is none); undefined when unreadable. */
function packedRefs(common: string): Map<string, string> | undefined {
  let text: string;
  try {
    text = readFileSync(join(common, "packed-refs"), "utf8");
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT" ? new Map() : undefined;
  }
  const refs = new Map<string, string>();
  for (const line of text.split("\n")) {
    // The header and the peeled value of the tag above are not refs.
    if (line === "" || line.startsWith("#") || line.startsWith("^")) continue;
    const space = line.indexOf(" ");
    const sha = line.slice(0, space);
    if (space < 0 || !SHA.test(sha)) return undefined;
    refs.set(line.slice(space + 1), sha);
  }
  return refs;
}
