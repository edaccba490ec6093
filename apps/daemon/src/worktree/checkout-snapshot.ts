import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

/**
 * Everything a person keeps in a checkout, byte for byte: HEAD, the checked-out branch and its
 * commit, the index file, every file of the working tree (tracked or not) and the stash. Two
 * snapshots are equal only when nothing of the person's was touched. For tests.
 */
export function checkoutSnapshot(repo: string): Record<string, string> {
  const git = (...args: string[]) => execFileSync("git", ["-C", repo, ...args], { encoding: "utf8" });
  const hash = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
  const snapshot: Record<string, string> = {
    HEAD: readFileSync(join(repo, ".git", "HEAD"), "utf8"),
    index: hash(readFileSync(join(repo, ".git", "index"))),
  };
  const branch = git("symbolic-ref", "--quiet", "HEAD").trim();
  snapshot.branch = `${branch} ${git("rev-parse", branch).trim()}`;
  const walk = (folder: string) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.name === ".git" && folder === repo) continue;
      if (entry.isDirectory()) walk(path);
      else snapshot[`file:${relative(repo, path)}`] = hash(readFileSync(path));
    }
  };
  walk(repo);
  snapshot.stash = git("stash", "list", "--format=%H %s");
  snapshot.stashRef = git("for-each-ref", "refs/stash");
  // Last, since status may refresh the index's cached file times (it was hashed above).
  snapshot.status = git("status", "--porcelain=v1", "--untracked-files=all");
  return snapshot;
}
