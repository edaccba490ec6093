import { identityOf, type LocatedLearning } from "./learning-entry";

/** Confidence gstack assumes for an entry without one. */
export const DEFAULT_CONFIDENCE = 5;

const DAY_MS = 86_400_000;

/**
 * The confidence gstack's search ranks an entry by. Observed and inferred entries lose one
 * point per full 30 days of age, down to 0 (as gstack's own search does, so a stale guess
 * sorts below everything still believed). User-stated and cross-model entries never decay.
 * An entry without a usable `ts`, or dated in the future, does not decay.
 */
export function effectiveConfidence(
  entry: { confidence?: unknown; source?: unknown; ts?: unknown },
  now: Date,
): number {
  const stored =
    typeof entry.confidence === "number" && Number.isFinite(entry.confidence)
      ? entry.confidence
      : DEFAULT_CONFIDENCE;
  if (entry.source !== "observed" && entry.source !== "inferred") return stored;
  const written = typeof entry.ts === "string" ? Date.parse(entry.ts) : Number.NaN;
  if (Number.isNaN(written)) return stored;
  const days = Math.floor(Math.max(0, now.getTime() - written) / DAY_MS);
  return Math.max(0, stored - Math.floor(days / 30));
}

function timeOf(entry: { ts?: unknown }): number {
  return typeof entry.ts === "string" ? Date.parse(entry.ts) : Number.NaN;
}

/**
 * True when `later`, read after `current` with the same `key|type`, becomes the current
 * entry: always, unless both carry timestamps and the later one's is strictly older.
 */
export function replaces(current: { ts?: unknown }, later: { ts?: unknown }): boolean {
  const before = timeOf(current);
  if (Number.isNaN(before)) return true;
  const after = timeOf(later);
  return Number.isNaN(after) || after >= before;
}

/**
 * Keeps the current entry per `key|type`. The file is append-only, so a later line replaces
 * an earlier one, unless both carry timestamps and the later line's is strictly older (a
 * line copied in from elsewhere does not undo a newer edit). The result keeps the order in
 * which each identity first appeared.
 */
export function latestPerIdentity<T extends LocatedLearning>(learnings: readonly T[]): T[] {
  const winners = new Map<string, T>();
  for (const candidate of learnings) {
    const identity = identityOf(candidate.entry);
    const current = winners.get(identity);
    if (current !== undefined && !replaces(current.entry, candidate.entry)) continue;
    winners.set(identity, candidate);
  }
  return [...winners.values()];
}

/**
 * gstack's trust gate for learnings read from another project's file: they count only when
 * `trusted` is exactly `true` (gstack sets it only for user-stated learnings).
 */
export function countsAcrossProjects(entry: { trusted?: unknown }): boolean {
  return entry.trusted === true;
}
