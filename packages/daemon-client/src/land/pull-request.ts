import { execFile } from "node:child_process";
import { readFile } from "node:fs/promises";
import type { GstackLayout, LandAnswer } from "@gstack/contracts";
import type { Audit } from "../audit-log";
import type { SessionState } from "../session-state";
import type { WorktreeRecord } from "../worktree/record";
import { firstLine, runGit } from "../worktree/run-git";
import { LandRefusal } from "./land-refusal";
import { finishLanding, type LandingRecord, recordedAt } from "./landing-record";

/**
 * Pushes the branch to the repository's remote (`origin`, else the first) and opens a pull
 * request with `gh`; one already open for the branch (a `land --pr` cut short) is recorded instead.
 */
export async function openPullRequest(
  layout: GstackLayout,
  state: SessionState,
  tree: WorktreeRecord,
  tip: string,
  options: { gh?: string; now?: () => Date; audit?: Audit },
): Promise<LandAnswer> {
  const gh = options.gh ?? "gh";
  const version = await run(gh, ["--version"], tree.repo);
  if (!version.ok)
    throw new LandRefusal("no-gh", `--pr needs the GitHub CLI (gh), which was not found: ${version.stderr}`);
  const remotes = (await runGit(tree.repo, ["remote"])).stdout.split("\n").filter(Boolean);
  const remote = remotes.includes("origin") ? "origin" : remotes[0];
  if (!remote) throw new LandRefusal("no-remote", `${tree.repo} has no remote to push ${tree.branch} to`);
  const pushed = await runGit(tree.repo, ["push", "--quiet", remote, `${tip}:refs/heads/${tree.branch}`]);
  if (!pushed.ok)
    throw new LandRefusal("git", `could not push ${tree.branch} to ${remote}: ${firstLine(pushed.stderr)}`);
  // A pull request already open for the branch is an earlier `land --pr` cut short between gh
  // opening it and the record being written: finished now, never opened twice.
  const existing = await existingPullRequest(gh, tree);
  if (existing) {
    const record: LandingRecord = {
      landing: "pr_opened",
      how: "pull-request",
      at: recordedAt(options),
      pr: existing,
      commit: tip,
    };
    return finishLanding(layout, state.id, tree, record, options);
  }
  const completion = await readFile(layout.dispatch.completedReport(state.id), "utf8").catch(() => "");
  const title = /^# (.+)$/m.exec(completion)?.[1] ?? `${state.project}: ${state.id}`;
  const created = await run(
    gh,
    [
      "pr",
      "create",
      "--head",
      tree.branch,
      ...(tree.land_into ? ["--base", tree.land_into] : []),
      "--title",
      title,
      "--body",
      `Work of dispatch ${state.id}.\n\n${completion.replace(/^---\n[\s\S]*?\n---\n/, "").trim()}`,
    ],
    tree.repo,
  );
  if (!created.ok)
    throw new LandRefusal(
      "git",
      `the branch is pushed, but gh could not open a pull request: ${created.stderr}`,
    );
  const url = created.stdout.trim().split("\n").pop() ?? "";
  const record: LandingRecord = {
    landing: "pr_opened",
    how: "pull-request",
    at: recordedAt(options),
    pr: url,
    commit: tip,
  };
  return finishLanding(layout, state.id, tree, record, options);
}

/** The address of an open pull request gh knows for the dispatch's branch, if any. */
async function existingPullRequest(gh: string, tree: WorktreeRecord): Promise<string | undefined> {
  const listed = await run(
    gh,
    ["pr", "list", "--head", tree.branch, "--state", "open", "--json", "url,headRefName"],
    tree.repo,
  );
  if (!listed.ok) return undefined;
  try {
    const prs = JSON.parse(listed.stdout) as Array<{ url?: unknown; headRefName?: unknown }>;
    const found = prs.find((pr) => pr.headRefName === tree.branch && typeof pr.url === "string");
    return found ? String(found.url) : undefined;
  } catch {
    return undefined;
  }
}

function run(
  program: string,
  args: string[],
  cwd: string,
): Promise<{ ok: boolean; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(program, args, { cwd, timeout: 120_000 }, (error, stdout, stderr) => {
      resolve({
        ok: !error,
        stdout: String(stdout),
        stderr: firstLine(String(stderr || error?.message || "")),
      });
    });
  });
}
