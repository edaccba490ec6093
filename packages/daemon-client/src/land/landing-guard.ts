import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type GstackLayout, withFileLock } from "@gstack/contracts";
import { readState, type SessionState } from "../session-state";
import { loadSettings } from "../settings";
import { checkTrust } from "../trust/trust";
import type { WorktreeRecord } from "../worktree/record";
import { LandRefusal } from "./land-refusal";
import { type LandingRecord, readLanding } from "./landing-record";

/** Where landing learns the `trusted_repos` in force; `config.yaml` of the layout when absent. */
export interface LandTrust {
  trustedRepos?: () => Promise<readonly string[]>;
}

/**
 * Takes the dispatch's landing lock, checks it can be landed or discarded, and runs `act`. Every
 * git command of a landing or a discard writes in the repository of the dispatch's checkout, so
 * that repository must be trusted now, and be the one the worktree was made from.
 */
export async function withLanding<T>(
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
