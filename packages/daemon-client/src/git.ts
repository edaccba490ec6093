import { execFile } from "node:child_process";
import { readHeadFromFiles } from "./git-head";

function git(cwd: string, args: string[]): Promise<string | undefined> {
  return new Promise((resolve) => {
    execFile("git", args, { cwd, timeout: 10_000, maxBuffer: 4 * 1024 * 1024 }, (error, stdout) => {
      resolve(error ? undefined : stdout);
    });
  });
}

/** The commit HEAD points at, or undefined outside a repository or before the first commit. */
export async function headCommit(cwd: string): Promise<string | undefined> {
  return (await git(cwd, ["rev-parse", "--verify", "--quiet", "HEAD"]))?.trim() || undefined;
}

/** The current branch name, or undefined when detached or outside a repository. */
export async function currentBranch(cwd: string): Promise<string | undefined> {
  const name = (await git(cwd, ["symbolic-ref", "--quiet", "--short", "HEAD"]))?.trim();
  return name || undefined;
}

/**
 * HEAD's commit and branch, read from the repository's files when their layout is the usual
 * one (no git process on the way to an agent's start), else from git.
 */
export async function headAndBranch(cwd: string): Promise<{ commit?: string; branch?: string }> {
  const fromFiles = await readHeadFromFiles(cwd);
  if (fromFiles) return fromFiles;
  const [commit, branch] = await Promise.all([headCommit(cwd), currentBranch(cwd)]);
  return { ...(commit ? { commit } : {}), ...(branch ? { branch } : {}) };
}

/** A commit made during a dispatch. */
export interface CommitSummary {
  sha: string;
  subject: string;
}

/**
 * Commits reachable from HEAD and not from `sinceSha`, oldest first. Without `sinceSha`
 * (the repository had no commit when the dispatch started) every commit counts.
 */
export async function commitsSince(cwd: string, sinceSha: string | undefined): Promise<CommitSummary[]> {
  // HEAD still where it was (or no commit yet) means nothing new, without starting git.
  const head = await readHeadFromFiles(cwd);
  if (head) {
    if (!head.commit || head.commit === sinceSha) return [];
  } else if (!(await headCommit(cwd))) {
    return [];
  }
  const range = sinceSha ? [`${sinceSha}..HEAD`] : ["HEAD"];
  const out = await git(cwd, ["log", "--reverse", "--format=%H%x09%s", ...range, "--"]);
  if (!out) return [];
  return out
    .split("\n")
    .filter((line) => line.includes("\t"))
    .map((line) => {
      const tab = line.indexOf("\t");
      return { sha: line.slice(0, tab), subject: line.slice(tab + 1) };
    });
}
