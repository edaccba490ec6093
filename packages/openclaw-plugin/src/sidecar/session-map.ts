import { access } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { readJsonIfPresent, writeJsonAtomic } from "../atomic-json";

/** One OpenClaw session's Claude Code session. */
export interface ClaudeSessionEntry {
  /** The Claude Code session id (`--resume`). */
  claudeSessionId: string;
  /** The folder the session was started in (Claude Code resumes only from there). */
  cwd: string;
  /** OpenClaw's session id when the Claude session began (a reset in OpenClaw changes it). */
  openclawSessionId?: string;
  createdAt: string;
  updatedAt: string;
  turns: number;
}

interface SessionMapFile {
  version: 1;
  sessions: Record<string, ClaudeSessionEntry>;
}

/**
 * The OpenClaw session key → Claude Code session map, kept in one JSON file written atomically.
 * Changes are applied one at a time in this process; a file that is not the map is refused with
 * its path, never overwritten.
 */
export class SessionMap {
  #chain: Promise<unknown> = Promise.resolve();

  constructor(readonly path: string) {}

  async get(sessionKey: string): Promise<ClaudeSessionEntry | undefined> {
    await this.#chain.catch(() => undefined);
    return (await this.#read()).sessions[sessionKey];
  }

  async all(): Promise<Record<string, ClaudeSessionEntry>> {
    await this.#chain.catch(() => undefined);
    return (await this.#read()).sessions;
  }

  /** Records the Claude session of an OpenClaw session (creating or replacing its entry). */
  set(sessionKey: string, entry: ClaudeSessionEntry): Promise<void> {
    return this.#update((file) => {
      file.sessions[sessionKey] = entry;
    });
  }

  delete(sessionKey: string): Promise<void> {
    return this.#update((file) => {
      delete file.sessions[sessionKey];
    });
  }

  #update(change: (file: SessionMapFile) => void): Promise<void> {
    const next = this.#chain
      .catch(() => undefined)
      .then(async () => {
        const file = await this.#read();
        change(file);
        await writeJsonAtomic(this.path, file);
      });
    this.#chain = next;
    return next;
  }

  async #read(): Promise<SessionMapFile> {
    const raw = await readJsonIfPresent(this.path);
    if (raw === undefined) return { version: 1, sessions: {} };
    const sessions = (raw as { sessions?: unknown }).sessions;
    if (
      typeof raw !== "object" ||
      raw === null ||
      (sessions !== undefined && (typeof sessions !== "object" || sessions === null))
    ) {
      throw new Error(`${this.path}: field sessions must be an object of session entries`);
    }
    const valid: Record<string, ClaudeSessionEntry> = {};
    for (const [key, value] of Object.entries((sessions ?? {}) as Record<string, unknown>)) {
      const entry = value as Partial<ClaudeSessionEntry> | null;
      if (entry && typeof entry.claudeSessionId === "string" && typeof entry.cwd === "string") {
        valid[key] = {
          claudeSessionId: entry.claudeSessionId,
          cwd: entry.cwd,
          ...(typeof entry.openclawSessionId === "string"
            ? { openclawSessionId: entry.openclawSessionId }
            : {}),
          createdAt: typeof entry.createdAt === "string" ? entry.createdAt : new Date(0).toISOString(),
          updatedAt: typeof entry.updatedAt === "string" ? entry.updatedAt : new Date(0).toISOString(),
          turns: typeof entry.turns === "number" ? entry.turns : 0,
        };
      }
    }
    return { version: 1, sessions: valid };
  }
}

/** Claude Code's folder name for a working directory: every character but letters and digits becomes `-`. */
export function claudeProjectFolderName(cwd: string): string {
  return cwd.replace(/[^A-Za-z0-9]/g, "-");
}

/**
 * Whether Claude Code still has the session's transcript
 * (`<config dir>/projects/<encoded cwd>/<id>.jsonl`, the config dir being `CLAUDE_CONFIG_DIR`
 * or `~/.claude` of the HOME the CLI runs with).
 */
export async function claudeSessionExists(
  entry: Pick<ClaudeSessionEntry, "claudeSessionId" | "cwd">,
  env: Record<string, string | undefined>,
): Promise<boolean> {
  const configDir = env.CLAUDE_CONFIG_DIR ?? join(env.HOME ?? homedir(), ".claude");
  const file = join(
    configDir,
    "projects",
    claudeProjectFolderName(entry.cwd),
    `${entry.claudeSessionId}.jsonl`,
  );
  return await access(file).then(
    () => true,
    () => false,
  );
}
