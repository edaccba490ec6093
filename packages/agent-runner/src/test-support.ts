import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The git identity commits in scratch repositories are made with. */
export const gitIdentity = {
  GIT_AUTHOR_NAME: "Scripted Agent",
  GIT_AUTHOR_EMAIL: "agent@example.invalid",
  GIT_COMMITTER_NAME: "Scripted Agent",
  GIT_COMMITTER_EMAIL: "agent@example.invalid",
};

/** Temporary folders of one test file; `removeAll` in `afterEach` cleans them up. */
export class ScratchFolders {
  readonly #folders: string[] = [];

  folder(prefix: string): string {
    const folder = mkdtempSync(join(tmpdir(), prefix));
    this.#folders.push(folder);
    return folder;
  }

  /** A git repository on `main` with one empty commit, so commits made later can be counted. */
  repository(prefix = "agent-runner-repo-"): string {
    const cwd = this.folder(prefix);
    const env = { ...process.env, ...gitIdentity };
    execFileSync("git", ["init", "-q", "-b", "main"], { cwd, env });
    execFileSync("git", ["commit", "-q", "--allow-empty", "-m", "Start"], { cwd, env });
    return cwd;
  }

  removeAll(): void {
    for (const folder of this.#folders.splice(0)) rmSync(folder, { recursive: true, force: true });
  }
}
