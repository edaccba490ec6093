import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface OpenClawHome {
  /** The folder used as HOME. */
  home: string;
  /** `~/.openclaw`, the state folder. */
  stateDir: string;
  /** `~/.openclaw/workspace`. */
  workspace: string;
  /** `~/.openclaw/openclaw.json`. */
  configPath: string;
  remove(): Promise<void>;
}

/**
 * Makes a throw-away home with an `openclaw.json` (the given config, JSON) and an empty
 * workspace, so a test can run the real OpenClaw without touching the user's own.
 */
export async function makeOpenClawHome(config: Record<string, unknown> = {}): Promise<OpenClawHome> {
  const home = await mkdtemp(join(tmpdir(), "openclaw-home-"));
  const stateDir = join(home, ".openclaw");
  const workspace = join(stateDir, "workspace");
  await mkdir(workspace, { recursive: true });
  const configPath = join(stateDir, "openclaw.json");
  await writeFile(configPath, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return {
    home,
    stateDir,
    workspace,
    configPath,
    // A stopped gateway's helpers (its cron and sqlite workers) can outlive it by a moment and
    // still write here: a folder that gains a file while it is removed (ENOTEMPTY) is tried again.
    remove: () => rm(home, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 }),
  };
}
