import { realpath } from "node:fs/promises";
import { checkProjectDir } from "../intake/intake";

/**
 * Checks, right before an agent starts, that the folder it will run in is still the one intake
 * took and still trusted by the settings in force now: the path is resolved again (a folder
 * swapped for a symbolic link since intake resolves elsewhere, and is refused) and matched
 * against the current `trusted_repos` (a list narrowed since, and a restart, refuses it).
 * Returns the reason to refuse, or undefined.
 */
export async function untrustedAtLaunch(
  projectDir: string,
  trustedRepos: readonly string[],
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
  const checked = await checkProjectDir(projectDir, trustedRepos);
  if (!checked.ok) return checked.refusal.reason;
  return undefined;
}
