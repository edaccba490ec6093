import type { AuthoredLearning } from "./authored-learning";
import { contentFingerprint } from "./content-fingerprint";
import { type InjectionFinding, screenLearning } from "./injection-screen";
import { identityOf, type LearningEntry, type LocatedLearning } from "./learning-entry";
import type { ParsedMemoryFile } from "./memory-file";
import { DEFAULT_CONFIDENCE, latestPerIdentity } from "./reading-rules";

/** A parsed memory file and where it lives in the workspace. */
export interface MemorySource {
  /** Path relative to the workspace, `/`-separated, e.g. `memory/gstack-acme.md`. */
  relative: string;
  parsed: ParsedMemoryFile;
}

/** A learning kept out because it looks like a prompt injection. */
export interface BlockedLearning {
  file: string;
  line: number;
  key: string;
  type: string;
  findings: InjectionFinding[];
}

/** A memory section that could not be imported. */
export interface ImportProblem {
  file: string;
  line: number;
  message: string;
}

/** What an import will append to gstack's learnings.jsonl, and what it left out. */
export interface ImportPlan {
  append: LearningEntry[];
  blocked: BlockedLearning[];
  problems: ImportProblem[];
}

/** `timestamp`, or one millisecond after `current` when that is later (clock skew). */
export function timestampAfter(current: unknown, timestamp: string): string {
  const before = typeof current === "string" ? Date.parse(current) : Number.NaN;
  if (Number.isNaN(before) || before < Date.parse(timestamp)) return timestamp;
  return new Date(before + 1).toISOString();
}

/** The memory file name this package writes for a project. */
export function memoryFileNameOf(slug: string): string {
  return `memory/gstack-${slug}.md`;
}

/** The project a hand-written learning belongs to: its `project:` line, else its file's. */
export function targetProjectOf(learning: AuthoredLearning, relativePath: string): string | undefined {
  if (learning.project !== undefined) return learning.project;
  const match = /^memory\/gstack-([A-Za-z0-9._-]+)\.md$/.exec(relativePath);
  return match?.[1];
}

/** The `origin` recorded on a learning imported from an OpenClaw memory file. */
export function originOf(relativePath: string): string {
  return `openclaw:${relativePath}`;
}

/** The JSONL entry for a hand-written learning. */
export function entryFromAuthored(
  learning: AuthoredLearning,
  relativePath: string,
  timestamp: string,
): LearningEntry {
  const entry: Record<string, unknown> = {
    skill: learning.skill ?? "openclaw",
    type: learning.type,
    key: learning.key,
    insight: learning.insight,
    confidence: learning.confidence ?? DEFAULT_CONFIDENCE,
    source: learning.source ?? "observed",
  };
  if (learning.files !== undefined) entry.files = learning.files;
  entry.ts = timestamp;
  // A Markdown file anyone can write is no proof the user said it: imports are never trusted.
  entry.trusted = false;
  entry.origin = originOf(relativePath);
  return entry as LearningEntry;
}

/**
 * Decides what to import from OpenClaw's memory into one project's learnings. Pure.
 *
 * - A section of `memory/gstack-{slug}.md` whose quoted insight was edited becomes a newer
 *   line with the same `key|type`, unless the current entry already says the same (the
 *   edit was imported before and the file not yet rewritten).
 * - A hand-written learning for this project is imported unless gstack has ever held a
 *   version with the same content (so repeated syncs add nothing, and a later edit on the
 *   gstack side is not undone by the older memory text).
 * - Anything that looks like a prompt injection is blocked and reported.
 */
export function planImport(input: {
  slug: string;
  existing: readonly LocatedLearning[];
  sources: readonly MemorySource[];
  timestamp: string;
}): ImportPlan {
  return planImportFrom(input, historyOf(input.existing)).plan;
}

/** What an import needs to know of gstack's side, asked only for the identities it meets. */
export interface LearningHistory {
  /** The current entry of an identity under gstack's reading rules. */
  current(identity: string): { insight: string; ts?: unknown } | undefined;
  /** The content fingerprints of every entry ever held for these identities. */
  fingerprints(identities: ReadonlySet<string>): Set<string>;
}

/** The history of a list of entries, worked out on first use. */
export function historyOf(existing: readonly LocatedLearning[]): LearningHistory {
  let currentMap: Map<string, LearningEntry> | undefined;
  return {
    current(identity) {
      currentMap ??= new Map(latestPerIdentity(existing).map((item) => [identityOf(item.entry), item.entry]));
      return currentMap.get(identity);
    },
    fingerprints(identities) {
      const seen = new Set<string>();
      for (const item of existing) {
        if (identities.has(identityOf(item.entry))) seen.add(contentFingerprint(item.entry));
      }
      return seen;
    },
  };
}

/**
 * {@link planImport} against any {@link LearningHistory}; also returns the identities of every
 * candidate met (imported, blocked or already held).
 */
export function planImportFrom(
  input: { slug: string; sources: readonly MemorySource[]; timestamp: string },
  current: LearningHistory,
): { plan: ImportPlan; wanted: Set<string> } {
  const plan: ImportPlan = { append: [], blocked: [], problems: [] };
  const ownFile = memoryFileNameOf(input.slug);
  const candidates: { file: string; line: number; entry: LearningEntry; edit: boolean }[] = [];

  for (const source of input.sources) {
    for (const problem of source.parsed.problems) {
      plan.problems.push({ file: source.relative, line: problem.line, message: problem.message });
    }
    if (source.relative === ownFile) {
      for (const section of source.parsed.generated) {
        if (!section.edited) continue;
        const latest = current.current(identityOf(section.entry));
        if (latest !== undefined && latest.insight === section.entry.insight) continue;
        const entry = {
          ...section.entry,
          ts: input.timestamp,
          trusted: false,
          origin: originOf(source.relative),
        };
        candidates.push({
          file: source.relative,
          line: section.line,
          entry: entry as LearningEntry,
          edit: true,
        });
      }
    }
    for (const section of source.parsed.authored) {
      if (targetProjectOf(section.learning, source.relative) !== input.slug) continue;
      candidates.push({
        file: source.relative,
        line: section.line,
        entry: entryFromAuthored(section.learning, source.relative, input.timestamp),
        edit: false,
      });
    }
  }
  const wanted = new Set(candidates.map((candidate) => identityOf(candidate.entry)));
  if (candidates.length === 0) return { plan, wanted };

  const seen = current.fingerprints(wanted);
  for (const candidate of candidates) {
    const fingerprint = contentFingerprint(candidate.entry);
    // The new line must win under gstack's rules even if the current one is dated ahead of this clock.
    candidate.entry.ts = timestampAfter(current.current(identityOf(candidate.entry))?.ts, input.timestamp);
    // An explicit edit of an exported section may restore an older text on purpose.
    if (seen.has(fingerprint) && !candidate.edit) continue;
    const findings = screenLearning(candidate.entry);
    if (findings.length > 0) {
      plan.blocked.push({
        file: candidate.file,
        line: candidate.line,
        key: candidate.entry.key,
        type: candidate.entry.type,
        findings,
      });
      continue;
    }
    seen.add(fingerprint);
    plan.append.push(candidate.entry);
  }
  return { plan, wanted };
}
