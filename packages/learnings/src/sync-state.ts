import { hash } from "node:crypto";
import { rm } from "node:fs/promises";
import { writeFileAtomic } from "@gstack/contracts";
import type { ReadWarning } from "./learning-entry";
import type { BlockedLearning } from "./plan-import";
import { readBytesIfPresent } from "./workspace-files";

/**
 * What the last sync of a project left behind, kept beside its learnings.jsonl so the next
 * sync can read only the lines added since. Every claim in it is checked before use (the
 * digests of the learnings prefix and of the memory file); any doubt means a full sync.
 *
 * It holds when the memory file is exactly what the sync wrote, as rendered from the first
 * `learnings.size` bytes of learnings.jsonl, with nothing in it waiting to be imported.
 */
export interface SyncState {
  v: 1;
  /** The memory file this state describes (absolute). */
  memoryFile: string;
  learnings: {
    /** Bytes of learnings.jsonl the memory file was rendered from (a whole number of lines). */
    size: number;
    /** SHA-256 (hex) of those bytes. */
    digest: string;
    /** Lines in them. */
    lines: number;
  };
  memory: {
    size: number;
    digest: string;
    /** Byte offsets of the learning sections (each a blank line, then the section). */
    sectionsStart: number;
    sectionsEnd: number;
    /** Sections in the file. */
    exported: number;
  };
  /** The skipped lines among the first `learnings.lines`. */
  warnings: ReadWarning[];
  /** Current entries kept out of the memory file as likely prompt injection, with their `ts`. */
  blocked: (BlockedLearning & { ts?: unknown })[];
  /**
   * The identities hand-written learnings in other memory files asked about at the last
   * sync, with what an import needs of them: every content fingerprint gstack held and the
   * current entry's insight and `ts`.
   */
  watched: { identity: string; fingerprints: string[]; current: { insight: string; ts?: unknown } | null }[];
}

/** The state file of a project's learnings.jsonl. */
export function syncStatePath(learningsFile: string): string {
  return `${learningsFile}.sync.json`;
}

/** SHA-256 of bytes, in hex. */
export function digestBytes(bytes: Uint8Array): string {
  return hash("sha256", bytes, "hex");
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Reads the state, or undefined when there is none or it is not one this version wrote. */
export async function readSyncState(path: string): Promise<SyncState | undefined> {
  const bytes = await readBytesIfPresent(path);
  if (bytes === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
  if (!isRecord(value) || value.v !== 1 || typeof value.memoryFile !== "string") return undefined;
  const { learnings, memory } = value;
  if (!isRecord(learnings) || !isCount(learnings.size) || !isCount(learnings.lines)) return undefined;
  if (typeof learnings.digest !== "string") return undefined;
  if (!isRecord(memory) || !isCount(memory.size) || typeof memory.digest !== "string") return undefined;
  if (!isCount(memory.sectionsStart) || !isCount(memory.sectionsEnd) || !isCount(memory.exported))
    return undefined;
  if (memory.sectionsStart > memory.sectionsEnd || memory.sectionsEnd > memory.size) return undefined;
  if (!Array.isArray(value.warnings) || !Array.isArray(value.blocked) || !Array.isArray(value.watched)) {
    return undefined;
  }
  for (const item of value.blocked) {
    if (!isRecord(item) || typeof item.key !== "string" || typeof item.type !== "string") return undefined;
  }
  for (const item of value.watched) {
    if (!isRecord(item) || typeof item.identity !== "string" || !Array.isArray(item.fingerprints))
      return undefined;
  }
  return value as unknown as SyncState;
}

/** Writes the state atomically. */
export async function writeSyncState(path: string, state: SyncState): Promise<void> {
  await writeFileAtomic(path, `${JSON.stringify(state)}\n`);
}

/** Removes the state, so the next sync is a full one. */
export async function removeSyncState(path: string): Promise<void> {
  await rm(path, { force: true });
}
