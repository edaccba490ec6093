import { readdir } from "node:fs/promises";
import type { GstackLayout, LandAnswer } from "@gstack/contracts";
import type { Audit } from "../audit-log";
import { listWorktrees } from "../worktree/git-worktrees";
import { commitsToLand } from "../worktree/measure";
import type { WorktreeRecord } from "../worktree/record";
import { firstLine } from "../worktree/run-git";
import {
  indexFolder,
  landGit,
  moveCheckedOutBranch,
  ownerOf,
  readMove,
  resumeCheckoutMove,
} from "./checkout-move";
import { LandRefusal, refusedAs } from "./land-refusal";
import { type LandTrust, withLanding } from "./landing-guard";
import { finishLanding, type LandingRecord, recordedAt, repeatAnswer } from "./landing-record";
import { branchTip, changedFiles, filesInTheWay, gitOut, isAncestor, mergeCommit } from "./merge";
import { openPullRequest } from "./pull-request";

export { LandRefusal } from "./land-refusal";
export { landingFile } from "./landing-file";
export { type LandTrust, landingTrust, untrustedCheckout } from "./landing-guard";
export { type LandingRecord, readLanding } from "./landing-record";

export interface LandOptions extends LandTrust {
  /** Push the branch and open a pull request with `gh` instead of merging locally. */
  pr?: boolean;
  /** The `gh` program (default `gh` on PATH). */
  gh?: string;
  now?: () => Date;
  audit?: Audit;
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
    const record: LandingRecord = { landing: "landed", how, at: recordedAt(options), commit: newSha };
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
    const record: LandingRecord = { landing: "discarded", how: "removed", at: recordedAt(options) };
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
    at: recordedAt(options),
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
