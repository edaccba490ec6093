import { contentFingerprint } from "./content-fingerprint";
import { screenLearning } from "./injection-screen";
import { identityOf, type LearningEntry, type LocatedLearning } from "./learning-entry";
import { type ParsedMemoryFile, parseMemoryFile, renderMemoryFile } from "./memory-file";
import type { BlockedLearning } from "./plan-import";
import { latestPerIdentity } from "./reading-rules";

/** The memory file to write for a project, and what was kept out of it. */
export interface ExportPlan {
  /** The complete new content of `memory/gstack-{slug}.md`. */
  text: string;
  /** How many learnings the file holds. */
  exported: number;
  blocked: BlockedLearning[];
  /**
   * Sections of the old file that were edited or written by hand and are not in gstack
   * yet; they are kept as they are so nothing is lost (run an import to take them in).
   */
  pending: number;
}

/**
 * Builds the memory file of one project from its learnings. Pure. The current entry per
 * `key|type` is exported; entries that look like prompt injection are left out and
 * reported. From the old file, text that is not a learning, learnings written by hand
 * that gstack does not hold, and edits not yet imported are kept, so an export never
 * destroys what a person or the agent wrote.
 */
export function planExport(input: {
  slug: string;
  learnings: readonly LocatedLearning[];
  /** The current content of the memory file, if there is one. */
  previousText?: string | undefined;
  /** The same, already parsed (saves parsing it again after an import). */
  previous?: ParsedMemoryFile | undefined;
}): ExportPlan {
  const { exported, keep, underTitle, blocked, pending } = planExportParts(input);
  return {
    text: renderMemoryFile(input.slug, exported, keep, underTitle),
    exported: exported.length,
    blocked,
    pending,
  };
}

/**
 * {@link planExport} without rendering the file: the entries to write as sections and the
 * blocks to keep after them, and for each blocked learning the entry that was blocked.
 */
export function planExportParts(input: {
  slug: string;
  learnings: readonly LocatedLearning[];
  /** The current content of the memory file, if there is one. */
  previousText?: string | undefined;
  /** The same, already parsed (saves parsing it again after an import). */
  previous?: ParsedMemoryFile | undefined;
}): {
  exported: LearningEntry[];
  keep: string[];
  /** Text a person typed under the title, kept there. */
  underTitle: string[];
  blocked: BlockedLearning[];
  blockedEntries: LearningEntry[];
  pending: number;
} {
  const previous: ParsedMemoryFile | undefined =
    input.previous ?? (input.previousText === undefined ? undefined : parseMemoryFile(input.previousText));
  const winners = latestPerIdentity(input.learnings);
  const edited = previous?.generated.some((section) => section.edited) ?? false;
  const current = new Map(edited ? winners.map((item) => [identityOf(item.entry), item.entry]) : []);
  const pendingEdits = new Map<string, string>();
  for (const section of previous?.generated ?? []) {
    if (!section.edited) continue;
    const identity = identityOf(section.entry);
    if (current.get(identity)?.insight !== section.entry.insight) pendingEdits.set(identity, section.text);
  }
  const held: { item: LocatedLearning; blocked: BlockedLearning }[] = [];
  const exported: LearningEntry[] = [];
  for (const item of winners) {
    if (pendingEdits.size > 0 && pendingEdits.has(identityOf(item.entry))) continue;
    const findings = screenLearning(item.entry);
    if (findings.length > 0) {
      const { file, line, entry } = item;
      held.push({ item, blocked: { file, line, key: entry.key, type: entry.type, findings } });
      continue;
    }
    exported.push(item.entry);
  }
  // By line, so the report does not depend on the order identities first appeared in.
  held.sort((left, right) => left.item.line - right.item.line);
  const blocked = held.map((pair) => pair.blocked);
  const keep: { line: number; text: string }[] = [];
  for (const section of previous?.generated ?? []) {
    if (pendingEdits.get(identityOf(section.entry)) === section.text) keep.push(section);
  }
  let pending = pendingEdits.size;
  if (previous !== undefined) {
    const wanted = new Set(previous.authored.map((section) => identityOf(section.learning)));
    const known = new Set<string>();
    for (const item of input.learnings) {
      if (wanted.has(identityOf(item.entry))) known.add(contentFingerprint(item.entry));
    }
    for (const section of previous.authored) {
      const belongsHere = section.learning.project === undefined || section.learning.project === input.slug;
      if (belongsHere && known.has(contentFingerprint(section.learning))) continue;
      if (belongsHere) pending++;
      keep.push(section);
    }
    keep.push(...previous.problems, ...previous.other);
  }
  keep.sort((left, right) => left.line - right.line);
  return {
    exported,
    keep: keep.map((block) => block.text),
    underTitle: (previous?.underTitle ?? []).map((block) => block.text),
    blocked,
    blockedEntries: held.map((pair) => pair.item.entry),
    pending,
  };
}
