import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { link, mkdir, open, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { stopProcessGroup } from "@gstack/agent-runner";
import { writeJsonAtomic } from "../atomic-json";

/** A process told apart from a later one that got the same pid: its id and when it started. */
export interface ProcessIdentity {
  pid: number;
  startTime: string;
}

/** One session's turn lock, as kept on disk. */
export interface TurnLockRecord {
  sessionKey: string;
  /** The gateway process running the turn. */
  holder: ProcessIdentity;
  /** The Claude Code process of the turn (the leader of its process group), once started. */
  claude?: ProcessIdentity;
  takenAt: string;
}

/**
 * When a process started, as the system reports it (Linux: clock ticks since boot from
 * /proc/<pid>/stat; elsewhere `ps -o lstart=`); undefined when there is no such process.
 */
export function processStartTime(pid: number): string | undefined {
  if (process.platform === "linux") {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // A zombie has ended; only its parent's wait keeps the entry.
      if (fields[0] === "Z" || fields[0] === "X") return undefined;
      return fields[19];
    } catch {
      return undefined;
    }
  }
  try {
    const started = execFileSync("ps", ["-o", "lstart=", "-p", String(pid)], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
    return started.length > 0 ? started : undefined;
  } catch {
    return undefined;
  }
}

/** This process's identity, or another's; undefined when it is not running. */
export function processIdentity(pid = process.pid): ProcessIdentity | undefined {
  const startTime = processStartTime(pid);
  return startTime === undefined ? undefined : { pid, startTime };
}

/** Whether the very process named (not a later one with its pid) still runs. */
export function identityAlive(identity: ProcessIdentity): boolean {
  return processStartTime(identity.pid) === identity.startTime;
}

function parseRecord(text: string): TurnLockRecord | undefined {
  try {
    const value = JSON.parse(text) as Partial<TurnLockRecord>;
    const isIdentity = (candidate: unknown): candidate is ProcessIdentity =>
      typeof candidate === "object" &&
      candidate !== null &&
      typeof (candidate as ProcessIdentity).pid === "number" &&
      typeof (candidate as ProcessIdentity).startTime === "string";
    if (typeof value.sessionKey !== "string" || !isIdentity(value.holder)) return undefined;
    return {
      sessionKey: value.sessionKey,
      holder: value.holder,
      ...(isIdentity(value.claude) ? { claude: value.claude } : {}),
      takenAt: typeof value.takenAt === "string" ? value.takenAt : "",
    };
  } catch {
    return undefined;
  }
}

/**
 * Per-session turn locks on disk (one 0600 file per OpenClaw session, created whole with a
 * hard link so no reader sees half a lock), so that one Claude Code session never has two
 * turns at once, even across gateway processes and a gateway killed mid-turn. A lock whose
 * gateway process is gone is stale: its Claude Code process group is stopped and the lock freed.
 */
export class TurnLocks {
  readonly #self: ProcessIdentity;

  constructor(readonly folder: string) {
    this.#self = processIdentity() ?? { pid: process.pid, startTime: "unknown" };
  }

  fileOf(sessionKey: string): string {
    return join(this.folder, `${createHash("sha256").update(sessionKey).digest("hex").slice(0, 32)}.json`);
  }

  /** Takes the session's lock: "taken", or the live lock that holds it. */
  async take(sessionKey: string): Promise<{ taken: true } | { taken: false; holder: TurnLockRecord }> {
    await mkdir(this.folder, { recursive: true, mode: 0o700 });
    const file = this.fileOf(sessionKey);
    const record: TurnLockRecord = { sessionKey, holder: this.#self, takenAt: new Date().toISOString() };
    const temporary = join(this.folder, `.${randomBytes(6).toString("hex")}.tmp`);
    const handle = await open(temporary, "wx", 0o600);
    try {
      await handle.writeFile(`${JSON.stringify(record)}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
    try {
      for (let attempt = 0; attempt < 5; attempt++) {
        try {
          await link(temporary, file);
          return { taken: true };
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        }
        const text = await readFile(file, "utf8").catch(() => undefined);
        if (text === undefined) continue;
        const existing = parseRecord(text);
        if (existing && identityAlive(existing.holder)) return { taken: false, holder: existing };
        await this.#clear(file, text, existing);
      }
      throw new Error(`${file}: the turn lock of ${sessionKey} keeps changing; try again`);
    } finally {
      await rm(temporary, { force: true });
    }
  }

  /** Records the turn's Claude Code process in the session's lock (held by this process). */
  async recordClaude(sessionKey: string, pid: number): Promise<void> {
    const file = this.fileOf(sessionKey);
    const existing = parseRecord(await readFile(file, "utf8"));
    if (
      !existing ||
      existing.holder.pid !== this.#self.pid ||
      existing.holder.startTime !== this.#self.startTime
    )
      return;
    const claude = processIdentity(pid);
    if (!claude) return;
    await writeJsonAtomic(file, { ...existing, claude });
  }

  /** Where the session's kept Claude Code process (between turns too) is recorded. */
  keptFileOf(sessionKey: string): string {
    return this.fileOf(sessionKey).replace(/\.json$/, ".kept.json");
  }

  /**
   * Records a Claude Code process kept for the session between turns (mode 0600, this process
   * as its holder), so that when this process dies its claude is stopped by the next start's
   * {@link sweep} like a running turn's.
   */
  async recordKept(sessionKey: string, pid: number): Promise<void> {
    const claude = processIdentity(pid);
    if (!claude) return;
    await mkdir(this.folder, { recursive: true, mode: 0o700 });
    const record: TurnLockRecord = {
      sessionKey,
      holder: this.#self,
      claude,
      takenAt: new Date().toISOString(),
    };
    await writeJsonAtomic(this.keptFileOf(sessionKey), record);
  }

  /** Removes the record of the session's kept process once it is stopped (if it names that process). */
  async forgetKept(sessionKey: string, pid: number): Promise<void> {
    const file = this.keptFileOf(sessionKey);
    const text = await readFile(file, "utf8").catch(() => undefined);
    const existing = text === undefined ? undefined : parseRecord(text);
    if (
      existing?.claude?.pid === pid &&
      existing.holder.pid === this.#self.pid &&
      existing.holder.startTime === this.#self.startTime
    )
      await rm(file, { force: true });
  }

  /** Frees the session's lock if this process holds it. */
  async release(sessionKey: string): Promise<void> {
    const file = this.fileOf(sessionKey);
    const text = await readFile(file, "utf8").catch(() => undefined);
    const existing = text === undefined ? undefined : parseRecord(text);
    if (existing?.holder.pid === this.#self.pid && existing.holder.startTime === this.#self.startTime)
      await rm(file, { force: true });
  }

  /**
   * Clears every stale lock and kept-process record (its gateway process is gone): the Claude
   * Code process it names is stopped with its whole process group, then the file is removed.
   * Returns what was cleared.
   */
  async sweep(): Promise<(TurnLockRecord & { kept: boolean })[]> {
    let names: string[];
    try {
      names = await readdir(this.folder);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    }
    const cleared: (TurnLockRecord & { kept: boolean })[] = [];
    for (const name of names) {
      if (!name.endsWith(".json")) continue;
      const file = join(this.folder, name);
      const text = await readFile(file, "utf8").catch(() => undefined);
      if (text === undefined) continue;
      const existing = parseRecord(text);
      if (existing && identityAlive(existing.holder)) continue;
      await this.#clear(file, text, existing);
      if (existing) cleared.push({ ...existing, kept: name.endsWith(".kept.json") });
    }
    return cleared;
  }

  /** Stops what a stale lock's turn left running and removes the lock, if it is still the same lock. */
  async #clear(file: string, text: string, existing: TurnLockRecord | undefined): Promise<void> {
    if (existing?.claude && identityAlive(existing.claude)) {
      await stopProcessGroup(existing.claude.pid, { graceMilliseconds: 2_000 });
    }
    const now = await readFile(file, "utf8").catch(() => undefined);
    if (now === text) await rm(file, { force: true });
  }
}
