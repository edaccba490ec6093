import { realpath } from "node:fs/promises";
import type { WorktreeRecord } from "@gstack/daemon-client";
import { checkTrust } from "@gstack/daemon-client";

/**
 * Checks, right before an agent starts, that the folder it will run in is still the one intake
 * took and still trusted by the settings in force now: the path is resolved again (a folder
 * swapped for a symbolic link since intake resolves elsewhere, and is refused) and it and the
 * repository it belongs to (`.git` files, links and `commondir` followed, see
 * `trust/trust.ts`) are matched against the current `trusted_repos` (a list narrowed since, and
 * a restart, refuses it). Once the dispatch has its worktree, the checkout it was made from
 * must still belong to the same repository, and that one trusted. Returns the reason to refuse,
 * or undefined.
 */
export async function untrustedAtLaunch(
  projectDir: string,
  trustedRepos: readonly string[],
  worktree?: WorktreeRecord,
): Promise<string | undefined> {
  let real: string;
  try {
    real = await realpath(projectDir);
  } catch {
    return `project folder ${projectDir} no longer exists`;
  }
  if (real !== projectDir) {
    return `project folder ${projectDir} now leads to ${real} (a symbolic link was put in its place after it was taken)`;
  }
  const checked = await checkTrust(projectDir, trustedRepos);
  if (!checked.ok) return checked.refusal.reason;
  if (worktree && worktree.repo !== projectDir) {
    const made = await checkTrust(worktree.repo, trustedRepos, {
      label: "the checkout",
      ...(worktree.common_dir !== undefined ? { sameRepositoryAs: worktree.common_dir } : {}),
    });
    if (!made.ok) return made.refusal.reason;
  } else if (worktree?.common_dir !== undefined && checked.repository?.commonDir !== worktree.common_dir) {
    const again = await checkTrust(projectDir, trustedRepos, { sameRepositoryAs: worktree.common_dir });
    if (!again.ok) return again.refusal.reason;
  }
  return undefined;
}
