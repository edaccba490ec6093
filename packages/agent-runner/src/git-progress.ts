import { execFile } from "node:child_process";
import { promisify } from "node:util";

const run = promisify(execFile);

async function git(cwd: string, args: string[]): Promise<string> {
  const { stdout } = await run("git", args, {
    cwd,
    maxBuffer: 16 * 1024 * 1024,
    env: { ...process.env, GIT_OPTIONAL_LOCKS: "0" },
  });
  return stdout.trim();
}

/** The commit HEAD points at, or undefined in a repository without commits (or outside one). */
export async function headSha(cwd: string): Promise<string | undefined> {
  try {
    return await git(cwd, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]);
  } catch {
    return undefined;
  }
}

/** Commits made in a working tree since a starting point. */
export interface GitProgress {
  /** HEAD now. */
  headSha?: string;
  /** The current branch, or undefined on a detached HEAD. */
  branch?: string;
  /** The commit the run started from. */
  sinceSha?: string;
  /** Commits reachable from HEAD and not from `sinceSha`, newest first. */
  commits: { sha: string; subject: string }[];
  commitCount: number;
  /** Uncommitted changes in the working tree. */
  dirty: boolean;
}

/**
 * Git's view of a run's progress: commits since `sinceSha` (`git rev-list sinceSha..HEAD`),
 * the current branch and whether work is uncommitted. With no `sinceSha` (the repository had no
 * commits when the run started) every commit counts.
 */
export async function gitProgress(
  cwd: string,
  sinceSha?: string,
  options: { maxCommits?: number } = {},
): Promise<GitProgress> {
  const head = await headSha(cwd);
  let branch: string | undefined;
  try {
    branch = (await git(cwd, ["symbolic-ref", "--quiet", "--short", "HEAD"])) || undefined;
  } catch {
    branch = undefined;
  }
  const status = await git(cwd, ["status", "--porcelain", "--untracked-files=normal"]).catch(() => "");
  if (head === undefined) return { branch, sinceSha, commits: [], commitCount: 0, dirty: status !== "" };
  const range = sinceSha ? `${sinceSha}..HEAD` : "HEAD";
  const count = Number(await git(cwd, ["rev-list", "--count", range]));
  const listed = await git(cwd, [
    "log",
    `--max-count=${options.maxCommits ?? 100}`,
    "--format=%H%x00%s",
    range,
  ]);
  const commits = listed
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [sha = "", subject = ""] = line.split("\0");
      return { sha, subject };
    });
  return { headSha: head, branch, sinceSha, commits, commitCount: count, dirty: status !== "" };
}

/** Progress an agent reports about itself, e.g. from a progress file it keeps. */
export interface ReportedProgress {
  /** The step it says it is on, from 1. */
  step: number;
  /** Steps it planned, when known. */
  totalSteps?: number;
  /** Steps it says are done. Defaults to `step - 1` (the current step is still in progress). */
  completedSteps?: number;
}

/** How git and the agent's own account agree. */
export interface ProgressCrossCheck {
  status: "consistent" | "commits_missing" | "ahead_of_report" | "no_report";
  /** Steps the agent says are done. */
  reportedDone?: number;
  commitCount: number;
  message: string;
}

/**
 * Cross-checks git against what the agent says, with one commit expected per finished step:
 * the report says step 3 with 2 commits is normal (step 3 in progress); step 5 with 1 commit means
 * the agent is skipping commits. Git is the fact, the report the claim.
 */
export function crossCheckProgress(commitCount: number, reported?: ReportedProgress): ProgressCrossCheck {
  if (!reported) {
    return {
      status: "no_report",
      commitCount,
      message: `${commitCount} commit(s); the agent reported no steps.`,
    };
  }
  const reportedDone = reported.completedSteps ?? Math.max(0, reported.step - 1);
  const of = reported.totalSteps ? ` of ${reported.totalSteps}` : "";
  if (commitCount < reportedDone) {
    return {
      status: "commits_missing",
      reportedDone,
      commitCount,
      message: `The agent says ${reportedDone} step(s)${of} are done but git has ${commitCount} commit(s): it may be skipping commits.`,
    };
  }
  if (commitCount > reportedDone + 1) {
    return {
      status: "ahead_of_report",
      reportedDone,
      commitCount,
      message: `Git has ${commitCount} commit(s) but the agent reports ${reportedDone} finished step(s)${of}: its report is behind.`,
    };
  }
  return {
    status: "consistent",
    reportedDone,
    commitCount,
    message: `Step ${reported.step}${of} in progress with ${commitCount} commit(s).`,
  };
}
