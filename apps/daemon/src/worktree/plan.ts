import { realpath } from "node:fs/promises";
import { isAbsolute, join, relative, resolve } from "node:path";
import {
  exists,
  findRepository,
  hasUncommittedChanges,
  insideDispatchWorktree,
  listWorktrees,
  runGit,
  type WorktreeRecord,
  WorktreeRefusal,
  worktreePath,
} from "@gstack/daemon-client";
import { branchNameProblem, defaultBranch } from "./branch-name";

export interface WorktreeRequest {
  stateRoot: string;
  project: string;
  dispatchId: string;
  projectDir: string;
  branch?: string;
  base?: string;
  now: Date;
}

/**
 * Decides a dispatch's worktree without writing anything: checks that the project's checkout
 * can have one, resolves the base to a commit and the branch name. Throws a WorktreeRefusal
 * saying why when it cannot.
 */
export async function planWorktree(request: WorktreeRequest): Promise<WorktreeRecord> {
  const { projectDir } = request;
  if (await insideDispatchWorktree(request.stateRoot, projectDir)) {
    throw new WorktreeRefusal(
      "inside-worktree",
      `project_dir ${projectDir} is inside another dispatch's worktree; name the project's own checkout`,
    );
  }
  const probe = await runGit(projectDir, ["rev-parse", "--is-bare-repository", "--show-toplevel"]);
  if (!probe.ok) {
    const bare = await runGit(projectDir, ["rev-parse", "--is-bare-repository"]);
    if (bare.ok && bare.stdout.trim() === "true") {
      throw new WorktreeRefusal(
        "bare-repository",
        `project_dir ${projectDir} is a bare repository: it has no checkout to start from; name a clone of it`,
      );
    }
    throw new WorktreeRefusal(
      "not-a-repository",
      `project_dir ${projectDir} is not in a git repository, so the dispatch cannot have a worktree of its own; run 'git init' there or list the project in in_place_projects`,
    );
  }
  const [isBare, top] = probe.stdout.trim().split("\n");
  if (isBare === "true" || !top) {
    throw new WorktreeRefusal("bare-repository", `project_dir ${projectDir} is a bare repository`);
  }
  const repo = await realpath(top);
  const found = await findRepository(repo);
  const sub = relative(repo, await realpath(projectDir));
  if (sub.startsWith("..") || isAbsolute(sub)) {
    throw new WorktreeRefusal(
      "not-a-repository",
      `project_dir ${projectDir} is outside its repository ${repo}`,
    );
  }
  // Only a repository with a .gitmodules file has submodules to check.
  const submodules = (await exists(join(repo, ".gitmodules")))
    ? await runGit(repo, ["submodule", "status"])
    : { stdout: "" };
  const missing = submodules.stdout
    .split("\n")
    .filter((line) => line.startsWith("-"))
    .map((line) => line.slice(1).split(" ")[1] ?? line);
  const initialised = submodules.stdout
    .split("\n")
    .filter((line) => /^[ +U]/.test(line) && line.trim() !== "")
    .map((line) => line.slice(1).split(" ")[1] ?? "")
    .filter(Boolean);
  if (missing.length > 0) {
    throw new WorktreeRefusal(
      "submodules",
      `the repository ${repo} has submodules that are not initialised (${missing.join(", ")}); run 'git submodule update --init' first`,
    );
  }
  const branch = request.branch ?? defaultBranch(request.dispatchId);
  const problem = branchNameProblem(branch);
  if (problem) throw new WorktreeRefusal("branch-name", `branch '${branch}' ${problem}`);
  const path = worktreePath(request.stateRoot, request.project, request.dispatchId);
  const branchExisted = (await runGit(repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${branch}`])).ok;
  // Only a branch that exists can be checked out somewhere: a new one skips the list of every
  // worktree, which grows with the worktrees waiting to be landed.
  const checkedOut = branchExisted
    ? (await listWorktrees(repo)).find(
        (entry) => entry.branch === branch && resolve(entry.path) !== resolve(path),
      )
    : undefined;
  if (checkedOut) {
    throw new WorktreeRefusal(
      "branch-checked-out",
      `branch '${branch}' is checked out in ${checkedOut.path}; git lets a branch be checked out in one place only`,
    );
  }
  const checkoutBranch = (await runGit(repo, ["symbolic-ref", "--quiet", "--short", "HEAD"])).stdout.trim();
  let base: string;
  let baseSha: string;
  let landInto: string | undefined;
  if (request.base !== undefined) {
    base = request.base;
    const resolved = await runGit(repo, [
      "rev-parse",
      "--verify",
      "--quiet",
      "--end-of-options",
      `${request.base}^{commit}`,
    ]);
    if (!resolved.ok || request.base.startsWith("-")) {
      throw new WorktreeRefusal(
        "base-missing",
        `base '${request.base}' is not a branch, tag or commit of ${repo}`,
      );
    }
    baseSha = resolved.stdout.trim();
    const isBranch = (await runGit(repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${request.base}`]))
      .ok;
    if (isBranch) {
      landInto = request.base;
      if (request.base === checkoutBranch && (await hasUncommittedChanges(repo))) {
        throw new WorktreeRefusal(
          "dirty-base",
          `base '${request.base}' is checked out in ${repo} with uncommitted changes the dispatch would not see; commit or stash them, or start from another base`,
        );
      }
    }
  } else {
    const head = await runGit(repo, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]);
    if (!head.ok) {
      throw new WorktreeRefusal(
        "no-commit",
        `the repository ${repo} has no commit yet to start a worktree from`,
      );
    }
    baseSha = head.stdout.trim();
    base = checkoutBranch || baseSha;
    if (checkoutBranch) landInto = checkoutBranch;
  }
  return {
    repo,
    ...(found.kind === "repository" ? { common_dir: found.commonDir } : {}),
    path,
    cwd: sub ? join(path, sub) : path,
    branch,
    base,
    base_sha: baseSha,
    ...(landInto ? { land_into: landInto } : {}),
    ...(branchExisted ? { branch_existed: true } : {}),
    ...(initialised.length > 0 ? { submodules: initialised } : {}),
    created_at: request.now.toISOString(),
  };
}
