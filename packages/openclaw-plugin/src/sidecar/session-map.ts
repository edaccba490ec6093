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
  /** OpenClaw's session id when the Claude session began (OpenClaw keeps it across /new and /reset). */
  openclawSessionId?: string;
  /**
   * OpenClaw's `lifecycleRevision` of the session when the Claude session began: OpenClaw
   * draws a new one whenever the session starts over (/new, /reset, an idle or daily reset).
   */
  openclawLifecycle?: string;
  createdAt: string;
  updatedAt: string;
  /** Turns Claude Code answered (a cancelled or failed turn does not count). */
  turns: number;
  /** Fingerprints of the user messages given to Claude Code in the latest turn (openclaw-turn.ts). */
  lastSent?: string[];
}

/** A Claude Code session an OpenClaw session no longer uses, kept so the person can resume it. */
export interface EndedClaudeSession extends ClaudeSessionEntry {
  sessionKey: string;
  endedAt: string;
  /** Why the OpenClaw session moved to a new Claude Code session. */
  reason: string;
}

interface SessionMapFile {
  version: 1;
  sessions: Record<string, ClaudeSessionEntry>;
  /** Earlier Claude Code sessions, oldest first (at most MAX_ENDED). */
  ended: EndedClaudeSession[];
}

/** How many ended sessions the map remembers. */
export const MAX_ENDED = 200;

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

  /** Earlier Claude Code sessions, oldest first. */
  async ended(): Promise<EndedClaudeSession[]> {
    await this.#chain.catch(() => undefined);
    return (await this.#read()).ended;
  }

  /**
   * Ends the OpenClaw session's current Claude Code session: it leaves the map's live entries
   * and joins the ended ones, with when and why, so `claude --resume <id>` can still find it.
   */
  retire(sessionKey: string, reason: string, endedAt = new Date()): Promise<void> {
    return this.#update((file) => {
      const entry = file.sessions[sessionKey];
      if (!entry) return;
      delete file.sessions[sessionKey];
      file.ended.push({ ...entry, sessionKey, endedAt: endedAt.toISOString(), reason });
      if (file.ended.length > MAX_ENDED) file.ended.splice(0, file.ended.length - MAX_ENDED);
    });
  }

  /** Changes fields of the OpenClaw session's entry, if it still names `claudeSessionId`. */
  patch(
    sessionKey: string,
    claudeSessionId: string,
    change: (entry: ClaudeSessionEntry) => ClaudeSessionEntry,
  ): Promise<void> {
    return this.#update((file) => {
      const entry = file.sessions[sessionKey];
      if (entry?.claudeSessionId === claudeSessionId) file.sessions[sessionKey] = change(entry);
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
    if (raw === undefined) return { version: 1, sessions: {}, ended: [] };
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
      const entry = readEntry(value);
      if (entry) valid[key] = entry;
    }
    const ended: EndedClaudeSession[] = [];
    const endedRaw = (raw as { ended?: unknown }).ended;
    for (const value of Array.isArray(endedRaw) ? endedRaw : []) {
      const entry = readEntry(value);
      const extra = value as Partial<EndedClaudeSession>;
      if (entry && typeof extra.sessionKey === "string" && typeof extra.endedAt === "string") {
        ended.push({
          ...entry,
          sessionKey: extra.sessionKey,
          endedAt: extra.endedAt,
          reason: typeof extra.reason === "string" ? extra.reason : "",
        });
      }
    }
    return { version: 1, sessions: valid, ended };
  }
}

/** One entry of the map, with the fields it must have; undefined when it is not one. */
function readEntry(value: unknown): ClaudeSessionEntry | undefined {
  const entry = value as Partial<ClaudeSessionEntry> | null;
  if (!entry || typeof entry.claudeSessionId !== "string" || typeof entry.cwd !== "string") return undefined;
  return {
    claudeSessionId: entry.claudeSessionId,
    cwd: entry.cwd,
    ...(typeof entry.openclawSessionId === "string" ? { openclawSessionId: entry.openclawSessionId } : {}),
    ...(typeof entry.openclawLifecycle === "string" ? { openclawLifecycle: entry.openclawLifecycle } : {}),
    createdAt: typeof entry.createdAt === "string" ? entry.createdAt : new Date(0).toISOString(),
    updatedAt: typeof entry.updatedAt === "string" ? entry.updatedAt : new Date(0).toISOString(),
    turns: typeof entry.turns === "number" ? entry.turns : 0,
    ...(Array.isArray(entry.lastSent)
      ? { lastSent: entry.lastSent.filter((item): item is string => typeof item === "string") }
      : {}),
  };
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
