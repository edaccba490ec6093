import { execFile } from "node:child_process";
import { lstat, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  type AuditEventName,
  type GstackLayout,
  type LandAnswer,
  parseValue,
  withFileLock,
  writeFileAtomic,
} from "@gstack/contracts";
import { type Audit, auditLog } from "../daemon-context";
import { readState, type SessionState } from "../session-state";
import { loadSettings } from "../settings";
import { checkTrust } from "../trust/trust";
import { listWorktrees, removeWorktree } from "../worktree/git-worktrees";
import { commitsToLand } from "../worktree/measure";
import type { WorktreeRecord } from "../worktree/record";
import { firstLine, runGit } from "../worktree/run-git";
import {
  forgetMove,
  indexFolder,
  landGit,
  MoveRefused,
  moveCheckedOutBranch,
  ownerOf,
  readMove,
  resumeCheckoutMove,
  type SavedFile,
} from "./checkout-move";
import { landingFile } from "./landing-file";

export { landingFile };

/** Why landing or discarding was refused; nothing was changed. `files` names what is in the way. */
export class LandRefusal extends Error {
  constructor(
    readonly rule:
      | "unknown"
      | "not-finished"
      | "in-place"
      | "discarded"
      | "landed"
      | "no-branch"
      | "nothing"
      | "base-not-branch"
      | "dirty-checkout"
      | "locked"
      | "unfinished"
      | "conflict"
      | "in-the-way"
      | "unlanded"
      | "no-remote"
      | "no-gh"
      | "untrusted"
      | "git",
    message: string,
    readonly files: string[] = [],
  ) {
    super(message);
    this.name = "LandRefusal";
  }
}

/** What `sessions/{id}/landing.json` keeps: the outcome, once reached. */
export interface LandingRecord {
  landing: "landed" | "pr_opened" | "discarded";
  how: NonNullable<LandAnswer["how"]>;
  at: string;
  commit?: string;
  pr?: string;
  /** Files found changed by someone else at the landing's paths after a kill, and where they went. */
  saved?: SavedFile[];
}

/** Where landing learns the `trusted_repos` in force; `config.yaml` of the layout when absent. */
export interface LandTrust {
  trustedRepos?: () => Promise<readonly string[]>;
}

export interface LandOptions extends LandTrust {
  /** Push the branch and open a pull request with `gh` instead of merging locally. */
  pr?: boolean;
  /** The `gh` program (default `gh` on PATH). */
  gh?: string;
  now?: () => Date;
  audit?: Audit;
}

/** What became of a dispatch's work, once landed, pushed or discarded; undefined while it awaits. */
export async function readLanding(layout: GstackLayout, id: string): Promise<LandingRecord | undefined> {
  try {
    return JSON.parse(await readFile(landingFile(layout, id), "utf8")) as LandingRecord;
  } catch {
    return undefined;
  }
}

/**
 * Brings a finished dispatch's branch into its base in the user's repository, on the person's
 * word: a fast-forward when the base has not moved, else a merge commit built without touching
 * any working tree (`git merge-tree`) and then moved in as a fast-forward. Refuses, changing
 * nothing, when the checkout holding the base has uncommitted changes or the branches conflict
 * (naming the files), and when the branch has no commits beyond its base (nothing to land: discard
 * it instead). With `pr`, pushes the branch to the repository's remote and opens a pull request
 * with `gh`. Done once: asking again answers what was done.
 */
export function landDispatch(
  layout: GstackLayout,
  id: string,
  options: LandOptions = {},
): Promise<LandAnswer> {
  return withLanding(layout, id, options, async (state, tree, done) => {
    if (done) {
      if (done.landing === "discarded") {
        throw new LandRefusal("discarded", `${id} was discarded; there is nothing to land`);
      }
      return repeatAnswer(layout, id, tree, done, options);
    }
    // A landing cut short while it moved a checked-out branch is finished (or undone) first.
    const resumed = await finishMove(layout, id, tree, options);
    if (resumed) return resumed;
    const tip = await branchTip(tree);
    if ((await commitsToLand(tree)) === 0) {
      // Landing would change nothing, and a pull request would hold nothing.
      throw new LandRefusal(
        "nothing",
        `nothing to land: the branch ${tree.branch} has no commits beyond ${tree.land_into ?? tree.base}; discard removes its worktree and branch`,
      );
    }
    if (options.pr) return openPullRequest(layout, state, tree, tip, options);
    const target = tree.land_into;
    if (!target) {
      throw new LandRefusal(
        "base-not-branch",
        `${id} started from ${tree.base}, which is not a branch; land it with --pr, or merge ${tree.branch} yourself`,
      );
    }
    const holder = (await listWorktrees(tree.repo)).find((entry) => entry.branch === target);
    // Another landing into that checkout cut short comes first (it may move the branch).
    if (holder) await finishOthersIn(layout, id, holder.path, options);
    const targetSha = await gitOut(tree.repo, ["rev-parse", "--verify", `refs/heads/${target}`]);
    const dirty = holder ? await changedFiles(holder.path) : [];
    if (holder && dirty.length > 0) {
      const files = dirty;
      throw new LandRefusal(
        "dirty-checkout",
        `${target} is checked out in ${holder.path} with uncommitted changes (${files.join(", ")}); commit or stash them, then land again`,
        files,
      );
    }
    let newSha: string;
    let how: "fast-forward" | "merge";
    if (await isAncestor(tree.repo, tip, targetSha)) {
      newSha = targetSha;
      how = "fast-forward";
    } else if (await isAncestor(tree.repo, targetSha, tip)) {
      newSha = tip;
      how = "fast-forward";
    } else {
      newSha = await mergeCommit(tree, target, targetSha, tip, state);
      how = "merge";
    }
    if (holder && newSha !== targetSha) {
      // git overwrites an ignored file at a path the landing adds, without a word: refused.
      const inTheWay = await filesInTheWay(tree.repo, holder.path, targetSha, newSha);
      if (inTheWay.length > 0) {
        const one = inTheWay.length === 1;
        throw new LandRefusal(
          "in-the-way",
          `${tree.branch} adds ${inTheWay.join(", ")}, and ${holder.path} already has ${one ? "a file" : "files"} there that git does not track (ignored or untracked), which landing would overwrite; nothing was changed: move ${one ? "it" : "them"} aside (or rename, or commit ${one ? "it" : "them"}), then land again`,
          inTheWay,
        );
      }
    }
    if (newSha !== targetSha) {
      if (holder) {
        // Not `git merge --ff-only`: killed while it writes the working tree, it leaves an
        // index.lock nothing can tell from the person's own (see checkout-move.ts).
        await refusedAs(
          moveCheckedOutBranch(layout, id, {
            holder: holder.path,
            branch: target,
            from: targetSha,
            to: newSha,
            how,
          }),
        );
      } else {
        const moved = await landGit(tree.repo, ["update-ref", `refs/heads/${target}`, newSha, targetSha], {
          detached: true,
        });
        if (!moved.ok) throw new LandRefusal("git", `git update-ref: ${firstLine(moved.stderr)}`);
      }
    }
    const record: LandingRecord = { landing: "landed", how, at: now(options), commit: newSha };
    return finishLanding(layout, id, tree, record, options);
  });
}

/**
 * Throws a dispatch's work away: its worktree and (unless it was the user's own) its branch.
 * A branch holding commits its base does not have needs `force`.
 */
export function discardDispatch(
  layout: GstackLayout,
  id: string,
  options: LandTrust & { force?: boolean; now?: () => Date; audit?: Audit } = {},
): Promise<LandAnswer> {
  return withLanding(layout, id, options, async (_state, tree, done) => {
    if (done) {
      if (done.landing !== "discarded") {
        throw new LandRefusal(
          "landed",
          `${id} was already ${done.landing === "landed" ? "landed" : "pushed"}; nothing to discard`,
        );
      }
      return repeatAnswer(layout, id, tree, done, options);
    }
    // A landing of it that a kill cut short is finished first: its record is what lets the
    // checkout be brought to one side, so it is never dropped with the work.
    const landed = await finishMove(layout, id, tree, options);
    if (landed) {
      throw new LandRefusal(
        "landed",
        `${id} was being landed when a kill cut the landing short; that landing is now finished (${landed.message}), so there is nothing to discard`,
      );
    }
    if (!options.force) {
      // The same count that decides whether there is anything to land.
      const count = (await commitsToLand(tree)) ?? 0;
      if (count > 0) {
        throw new LandRefusal(
          "unlanded",
          `${tree.branch} holds ${count} commit${count === 1 ? "" : "s"} that ${tree.land_into ?? tree.base} does not have; discard --force throws ${count === 1 ? "it" : "them"} away`,
        );
      }
    }
    const record: LandingRecord = { landing: "discarded", how: "removed", at: now(options) };
    return finishLanding(layout, id, tree, record, options);
  });
}

/**
 * The landing of `id` cut short while it moved a checked-out branch, finished: the checkout
 * brought to the landed side (or, when its branch moved since, put back), then recorded.
 * Undefined when no such move is left (nothing of one is in the checkout).
 */
async function finishMove(
  layout: GstackLayout,
  id: string,
  tree: WorktreeRecord,
  options: { now?: () => Date; audit?: Audit },
): Promise<LandAnswer | undefined> {
  const resumed = await refusedAs(resumeCheckoutMove(layout, id));
  if (!resumed) return undefined;
  const record: LandingRecord = {
    landing: "landed",
    how: resumed.move.how,
    at: now(options),
    commit: resumed.move.to,
    ...(resumed.saved.length > 0 ? { saved: resumed.saved } : {}),
  };
  return finishLanding(layout, id, tree, record, options);
}

/**
 * At start-up, and before another landing into the same checkout: a landing of `id` cut short
 * while it moved a checked-out branch is finished (waiting while someone else finishes it).
 * Never starts a landing afresh; undefined when nothing of one was left.
 */
function finishCutLanding(
  layout: GstackLayout,
  id: string,
  options: LandTrust & { now?: () => Date; audit?: Audit } = {},
): Promise<LandAnswer | undefined> {
  return withLanding(
    layout,
    id,
    options,
    async (_state, tree, done) =>
      done ? repeatAnswer(layout, id, tree, done, options) : finishMove(layout, id, tree, options),
    { timeoutMs: WAIT_FOR_LANDING_MS },
  );
}

/** How long a landing waits for another one into the same checkout that is being finished. */
const WAIT_FOR_LANDING_MS = 10 * 60_000;

/**
 * Landings of other dispatches into the checkout at `holder` that a kill cut short (their
 * lock's owner file beside the index, their record here) are finished first, each under its
 * own landing lock: one being finished now (by the daemon's start-up, another `land`) is
 * waited for. Until then the checkout is half-way and its index locked.
 */
async function finishOthersIn(
  layout: GstackLayout,
  id: string,
  holder: string,
  options: LandTrust & { now?: () => Date; audit?: Audit },
): Promise<void> {
  const names = await indexFolder(holder)
    .then((folder) => readdir(folder))
    .catch(() => [] as string[]);
  for (const name of names) {
    const other = ownerOf(name);
    if (!other || other === id) continue;
    const pending = await Promise.resolve()
      .then(() => readMove(layout, other))
      .catch(() => undefined);
    if (!pending) continue;
    await finishCutLanding(layout, other, options).catch((error: unknown) => {
      if (error instanceof LandRefusal && error.rule === "unknown") return undefined;
      throw error instanceof LandRefusal
        ? new LandRefusal(
            error.rule,
            `the landing of ${other} into the same checkout comes first: ${error.message}`,
            error.files,
          )
        : error;
    });
  }
}

/**
 * Takes the dispatch's landing lock, checks it can be landed or discarded, and runs `act`. Every
 * git command of a landing or a discard writes in the repository of the dispatch's checkout, so
 * that repository must be trusted now, and be the one the worktree was made from.
 */
async function withLanding<T>(
  layout: GstackLayout,
  id: string,
  trust: LandTrust,
  act: (state: SessionState, tree: WorktreeRecord, done: LandingRecord | undefined) => Promise<T>,
  lock: { timeoutMs?: number } = {},
): Promise<T> {
  layout.dispatch.sessionDir(id);
  const state = await readState(layout, id);
  if (!state) throw new LandRefusal("unknown", `no dispatch ${id} is known here`);
  return withFileLock(
    join(layout.dispatch.sessionDir(id), "landing.lock"),
    async () => {
      const done = await readLanding(layout, id);
      const current = (await readState(layout, id)) ?? state;
      if (!current.worktree) {
        throw new LandRefusal(
          "in-place",
          current.in_place
            ? `${id} ran in place in ${current.project_dir}; its commits are already there`
            : `${id} has no worktree of its own (it never started)`,
        );
      }
      // The report is the end of the run (the state is marked finished a moment after it).
      const reported = await readFile(layout.dispatch.completedJson(id), "utf8").then(
        () => true,
        () => false,
      );
      if (current.status !== "finished" && !reported && !done) {
        throw new LandRefusal(
          "not-finished",
          `${id} is still ${current.status}; wait for its report, or cancel it`,
        );
      }
      await refuseUntrusted(layout, id, current.worktree, trust);
      return act(current, current.worktree, done);
    },
    lock,
  );
}

/** The `trusted_repos` a landing is judged by: the caller's list in force, else `config.yaml`'s. */
export async function landingTrust(layout: GstackLayout, trust: LandTrust): Promise<readonly string[]> {
  return trust.trustedRepos ? trust.trustedRepos() : (await loadSettings(layout)).settings.trusted_repos;
}

/**
 * Why git may not write in the repository of a dispatch's checkout now, or undefined: that
 * repository is not trusted by `trusted` (narrowed since the run), or is no longer the one the
 * worktree was made from (its `.git` swapped since). A checkout that no longer exists is let
 * through: no git command can write anywhere through it.
 */
export async function untrustedCheckout(
  tree: WorktreeRecord,
  trusted: readonly string[],
): Promise<string | undefined> {
  const verdict = await checkTrust(tree.repo, trusted, {
    label: "the checkout",
    ...(tree.common_dir !== undefined ? { sameRepositoryAs: tree.common_dir } : {}),
  });
  if (verdict.ok || verdict.refusal.rule === "project-dir") return undefined;
  return verdict.refusal.reason;
}

/** Refuses, changing nothing, a landing or discard into a repository {@link untrustedCheckout} refuses. */
async function refuseUntrusted(
  layout: GstackLayout,
  id: string,
  tree: WorktreeRecord,
  trust: LandTrust,
): Promise<void> {
  const reason = await untrustedCheckout(tree, await landingTrust(layout, trust));
  if (reason === undefined) return;
  throw new LandRefusal("untrusted", `${id} was not landed or discarded, and nothing was changed: ${reason}`);
}

/**
 * At start-up: the steps after a landing's record (the completion's mark, the `landed` or
 * `discarded` event) carried out when a kill cut them short and nobody asked again. Does
 * nothing for a dispatch with no landing record.
 */
export function completeRecordedLanding(
  layout: GstackLayout,
  id: string,
  options: LandTrust & { now?: () => Date; audit?: Audit } = {},
): Promise<LandAnswer | undefined> {
  return withLanding(layout, id, options, async (_state, tree, done) =>
    done ? repeatAnswer(layout, id, tree, done, options) : undefined,
  );
}

/**
 * What was done, asked again: the steps after the record (the completion, the audit event) are
 * carried out if a crash cut them short, so each happens once.
 */
async function repeatAnswer(
  layout: GstackLayout,
  id: string,
  tree: WorktreeRecord,
  done: LandingRecord,
  options: { now?: () => Date; audit?: Audit },
): Promise<LandAnswer> {
  await finishLanding(layout, id, tree, done, options);
  return answer(id, tree, done, false);
}

async function finishLanding(
  layout: GstackLayout,
  id: string,
  tree: WorktreeRecord,
  record: LandingRecord,
  options: { now?: () => Date; audit?: Audit },
): Promise<LandAnswer> {
  // The record first: from here a crash is finished by asking again, never done twice.
  await writeFileAtomic(landingFile(layout, id), `${JSON.stringify(record, null, 2)}\n`);
  await forgetMove(layout, id);
  await removeWorktree(tree.repo, tree.path);
  if (record.landing !== "pr_opened" && !tree.branch_existed) {
    // Deleting a branch takes packed-refs.lock: let a kill of the daemon not strand it.
    await landGit(tree.repo, ["branch", "-D", tree.branch], { detached: true });
  }
  await markCompletion(layout, id, record);
  const event: AuditEventName = record.landing === "discarded" ? "discarded" : "landed";
  if (!(await alreadyAudited(layout, id, event))) {
    const audit = options.audit ?? auditLog(layout, options.now ?? (() => new Date()), () => undefined);
    await audit(event, {
      dispatch_id: id,
      detail: {
        how: record.how,
        branch: tree.branch,
        ...(tree.land_into ? { into: tree.land_into } : {}),
        ...(record.commit ? { commit: record.commit } : {}),
        ...(record.pr ? { pr: record.pr } : {}),
        ...(record.saved ? { saved: record.saved } : {}),
      },
    });
  }
  return answer(id, tree, record, true);
}

/** The completion says where the work went (its `pr` too, when one was opened). */
async function markCompletion(layout: GstackLayout, id: string, record: LandingRecord): Promise<void> {
  const path = layout.dispatch.completedJson(id);
  let completion: Record<string, unknown>;
  try {
    completion = JSON.parse(await readFile(path, "utf8")) as Record<string, unknown>;
  } catch {
    return;
  }
  completion.landing = record.landing;
  const pr = record.pr ? /github\.com\/([^/]+\/[^/]+)\/pull\/(\d+)/.exec(record.pr) : null;
  if (pr) completion.pr = `${pr[1]}#${pr[2]}`;
  const checked = parseValue("completion", completion);
  await writeFileAtomic(path, `${JSON.stringify(checked, null, 2)}\n`);
}

async function alreadyAudited(layout: GstackLayout, id: string, event: AuditEventName): Promise<boolean> {
  const text = await readFile(layout.dispatch.audit, "utf8").catch(() => "");
  return text.split("\n").some((line) => {
    if (!line.includes(id)) return false;
    try {
      const entry = JSON.parse(line) as { event?: string; dispatch_id?: string };
      return entry.event === event && entry.dispatch_id === id;
    } catch {
      return false;
    }
  });
}

function answer(id: string, tree: WorktreeRecord, record: LandingRecord, changed: boolean): LandAnswer {
  const into = tree.land_into ?? tree.base;
  const message =
    record.landing === "discarded"
      ? `${changed ? "discarded" : "already discarded"}: ${tree.branch} and its worktree are gone`
      : record.landing === "pr_opened"
        ? `${changed ? "pushed" : "already pushed"} ${tree.branch} and opened ${record.pr ?? "a pull request"}`
        : `${changed ? "landed" : "already landed"} ${tree.branch} into ${into} (${record.how}) at ${record.commit?.slice(0, 12) ?? "?"}${savedNote(record.saved)}`;
  return parseValue("land-answer", {
    dispatch_id: id,
    landing: record.landing,
    changed,
    how: record.how,
    branch: tree.branch,
    base: into,
    ...(record.commit ? { commit: record.commit } : {}),
    ...(record.pr ? { pr: record.pr } : {}),
    message,
  });
}

/**
 * The files found changed by someone else at the landing's paths after it was cut short, and
 * where each was moved (the landed version is in their place).
 */
function savedNote(saved: SavedFile[] | undefined): string {
  if (!saved || saved.length === 0) return "";
  const list = saved.map((entry) => `${entry.path} (now at ${entry.at})`).join(", ");
  return `; the landing had been cut short, and ${saved.length === 1 ? "a file it changes was" : `${saved.length} files it changes were`} since changed by someone else: moved out of the way, not lost: ${list}`;
}

async function branchTip(tree: WorktreeRecord): Promise<string> {
  const tip = await runGit(tree.repo, ["rev-parse", "--verify", "--quiet", `refs/heads/${tree.branch}`]);
  if (!tip.ok)
    throw new LandRefusal("no-branch", `the branch ${tree.branch} no longer exists in ${tree.repo}`);
  return tip.stdout.trim();
}

async function isAncestor(repo: string, ancestor: string, of: string): Promise<boolean> {
  return (await runGit(repo, ["merge-base", "--is-ancestor", ancestor, of])).ok;
}

/** A merge commit of `tip` into `targetSha`, made in the object store only; refuses on a conflict. */
async function mergeCommit(
  tree: WorktreeRecord,
  target: string,
  targetSha: string,
  tip: string,
  state: SessionState,
): Promise<string> {
  const merged = await runGit(tree.repo, [
    "merge-tree",
    "--write-tree",
    "--name-only",
    "--no-messages",
    targetSha,
    tip,
  ]);
  const lines = merged.stdout.split("\n");
  if (merged.code === 1) {
    const files = lines.slice(1).filter((line) => line.length > 0);
    throw new LandRefusal(
      "conflict",
      `${tree.branch} conflicts with ${target} in ${files.join(", ")}; nothing was changed: merge it yourself, or discard it`,
      files,
    );
  }
  if (!merged.ok || !lines[0]) throw new LandRefusal("git", `git merge-tree: ${firstLine(merged.stderr)}`);
  const message = `Merge ${tree.branch} into ${target}\n\nDispatch ${state.id} (${state.project}).\n`;
  return gitOut(tree.repo, ["commit-tree", lines[0], "-p", targetSha, "-p", tip, "-m", message]);
}

async function openPullRequest(
  layout: GstackLayout,
  state: SessionState,
  tree: WorktreeRecord,
  tip: string,
  options: LandOptions,
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
      at: now(options),
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
    at: now(options),
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

/** A checkout-moving step's refusal, as the landing's. */
async function refusedAs<T>(step: Promise<T>): Promise<T> {
  try {
    return await step;
  } catch (error) {
    if (error instanceof MoveRefused) {
      const rule = error.rule === "locked" || error.rule === "unfinished" ? error.rule : "git";
      throw new LandRefusal(rule, error.message, error.files);
    }
    throw error;
  }
}

/**
 * Tracked files with staged or unstaged changes in a checkout (git's own refusal, when it cannot
 * tell, stands for one). Read without git's optional index refresh, which takes the index lock.
 */
async function changedFiles(folder: string): Promise<string[]> {
  const out = await runGit(folder, [
    "--no-optional-locks",
    "status",
    "--porcelain",
    "--untracked-files=no",
    "-z",
  ]);
  if (!out.ok) return [`(git status: ${firstLine(out.stderr)})`];
  return out.stdout
    .split("\0")
    .filter((entry) => entry.length > 3)
    .map((entry) => entry.slice(3));
}

/**
 * Paths the move from `from` to `to` adds that something untracked in the checkout occupies (an
 * ignored `config.env`, an untracked file or folder, an untracked file where the landing needs a
 * folder): git would overwrite an ignored file there silently. A path taken by what `from` tracks
 * (a tracked file the landing turns into a folder, a tracked folder it turns into a file) is
 * git's to replace and not in the way; git is asked only about paths where something is found.
 */
async function filesInTheWay(repo: string, checkout: string, from: string, to: string): Promise<string[]> {
  const args = ["diff-tree", "-r", "--no-renames", "--name-only", "--diff-filter=A", "-z", from, to];
  const added = await runGit(repo, args);
  if (!added.ok) throw new LandRefusal("git", `git diff-tree: ${firstLine(added.stderr)}`);
  // What occupies each added path: the path itself, or a file where it needs a folder.
  const occupied = new Map<string, string>();
  for (const path of added.stdout.split("\0").filter(Boolean)) {
    const code = await lstat(join(checkout, path)).then(
      () => "EXISTS",
      (error: NodeJS.ErrnoException) => error.code,
    );
    if (code === "EXISTS") occupied.set(path, path);
    else if (code === "ENOTDIR") {
      const parts = path.split("/");
      for (let depth = 1; depth < parts.length; depth += 1) {
        const parent = parts.slice(0, depth).join("/");
        const info = await lstat(join(checkout, parent)).catch(() => undefined);
        if (info && !info.isDirectory()) {
          occupied.set(path, parent);
          break;
        }
      }
    }
  }
  if (occupied.size === 0) return [];
  // Of those, the ones git does not track: untracked and ignored files alike (no exclusions).
  const occupants = [...new Set(occupied.values())];
  const others = await runGit(checkout, [
    "--literal-pathspecs",
    "ls-files",
    "-z",
    "--others",
    "--",
    ...occupants,
  ]);
  if (!others.ok) throw new LandRefusal("git", `git ls-files: ${firstLine(others.stderr)}`);
  const untracked = others.stdout.split("\0").filter(Boolean);
  return occupants.filter((occupant) =>
    untracked.some((file) => file === occupant || file.startsWith(`${occupant}/`)),
  );
}

async function gitOut(cwd: string, args: string[]): Promise<string> {
  const out = await runGit(cwd, args);
  if (!out.ok) throw new LandRefusal("git", `git ${args[0]}: ${firstLine(out.stderr)}`);
  return out.stdout.trim();
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

function now(options: { now?: () => Date }): string {
  return (options.now?.() ?? new Date()).toISOString();
}
