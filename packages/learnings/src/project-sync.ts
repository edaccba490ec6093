import { mkdir, readFile } from "node:fs/promises";
import {
  appendLines,
  gstackLayout,
  openClawLayout,
  resolveGstackHome,
  resolveOpenClawWorkspace,
  writeFileAtomic,
} from "@gstack/contracts";
import { contentFingerprint } from "./content-fingerprint";
import { withFileLock } from "./file-lock";
import { screenLearning } from "./injection-screen";
import { identityOf, type LearningEntry, type LocatedLearning, type ReadWarning } from "./learning-entry";
import { parseMemoryFile, renderMemoryFileBytes } from "./memory-file";
import { parseLearningLines } from "./parse-learnings";
import { planExportParts } from "./plan-export";
import {
  type BlockedLearning,
  historyOf,
  type ImportPlan,
  type ImportProblem,
  type LearningHistory,
  type MemorySource,
  memoryFileNameOf,
  planImportFrom,
  targetProjectOf,
} from "./plan-import";
import { replaces } from "./reading-rules";
import { SectionSplicer } from "./section-splice";
import {
  digestBytes,
  readSyncState,
  removeSyncState,
  type SyncState,
  syncStatePath,
  writeSyncState,
} from "./sync-state";
import { listMemoryFiles, readBytesIfPresent } from "./workspace-files";

/** Where both sides live and which project to bridge. */
export interface BridgeOptions {
  /** gstack's state root (default: `resolveGstackHome()` from @gstack/contracts). */
  root?: string;
  /** The OpenClaw workspace (default: `resolveOpenClawWorkspace()` from @gstack/contracts). */
  workspace?: string;
  /** The gstack project slug. */
  project: string;
  /** The clock, for timestamps of imported learnings (default: the system clock). */
  now?: () => Date;
  /** How long to wait for another sync of the same project (default 30 s). */
  lockTimeoutMs?: number;
}

/** What a sync, import or export did. */
export interface SyncReport {
  project: string;
  learningsFile: string;
  memoryFile: string;
  /** Learnings appended to gstack's learnings.jsonl. */
  imported: number;
  /** Learnings in the memory file after the export (0 when no export ran). */
  exported: number;
  /** True when the memory file was rewritten (false when its bytes were already right). */
  written: boolean;
  /** Edits and hand-written learnings kept in the memory file but not in gstack yet. */
  pending: number;
  /** Learnings kept out because they look like prompt injection. */
  blocked: BlockedLearning[];
  /** Learning sections in memory files that could not be read. */
  problems: ImportProblem[];
  /** Lines of learnings.jsonl that were skipped. */
  warnings: ReadWarning[];
}

async function readMemorySources(
  workspace: string,
  skip: string,
  warnings: ReadWarning[],
): Promise<MemorySource[]> {
  const sources: MemorySource[] = [];
  for (const file of await listMemoryFiles(workspace)) {
    if (file.relative === skip) continue;
    let text: string;
    try {
      text = await readFile(file.path, "utf8");
    } catch (error) {
      warnings.push({ file: file.path, line: 0, message: `cannot be read (${(error as Error).message})` });
      continue;
    }
    // Only files that can hold a learning section are parsed; chats and calendars are skipped fast.
    if (!/^ {0,3}#{1,6}[ \t]+(?:gstack[ \t]+)?learning(?![a-z])/im.test(text)) continue;
    sources.push({ relative: file.relative, parsed: parseMemoryFile(text) });
  }
  return sources;
}

interface RunContext {
  steps: { import: boolean; export: boolean };
  slug: string;
  workspace: string;
  learningsFile: string;
  memoryFile: string;
  statePath: string;
  timestamp: () => string;
  report: SyncReport;
  /** learnings.jsonl as read under the lock (empty when missing). */
  learningsBytes: Buffer;
  /** The memory file as read under the lock. */
  memoryBytes: Buffer | undefined;
}

async function run(options: BridgeOptions, steps: { import: boolean; export: boolean }): Promise<SyncReport> {
  const root = options.root ?? resolveGstackHome(process.env);
  const workspace = options.workspace ?? resolveOpenClawWorkspace(process.env);
  const project = gstackLayout(root).project(options.project);
  const memoryFile = openClawLayout(workspace).gstackMemory(options.project);
  const report: SyncReport = {
    project: options.project,
    learningsFile: project.learnings,
    memoryFile,
    imported: 0,
    exported: 0,
    written: false,
    pending: 0,
    blocked: [],
    problems: [],
    warnings: [],
  };
  await mkdir(project.dir, { recursive: true });
  const lockOptions = options.lockTimeoutMs === undefined ? {} : { timeoutMs: options.lockTimeoutMs };
  return withFileLock(
    `${project.learnings}.lock`,
    async () => {
      const statePath = syncStatePath(project.learnings);
      const context: RunContext = {
        steps,
        slug: options.project,
        workspace,
        learningsFile: project.learnings,
        memoryFile,
        statePath,
        timestamp: () => (options.now?.() ?? new Date()).toISOString(),
        report,
        learningsBytes: (await readBytesIfPresent(project.learnings)) ?? Buffer.alloc(0),
        memoryBytes: await readBytesIfPresent(memoryFile),
      };
      const state = await readSyncState(statePath);
      if (state !== undefined && stateHolds(state, context) && (await runIncremental(context, state))) {
        return report;
      }
      await runFull(context);
      return report;
    },
    lockOptions,
  );
}

/** The lines a sync appends: after a last line without its newline (a crashed writer), a newline first. */
function linesToAppend(entries: readonly LearningEntry[], unterminated: boolean): string[] {
  const lines = entries.map((entry) => JSON.stringify(entry));
  return unterminated ? ["", ...lines] : lines;
}

function endsUnterminated(bytes: Buffer): boolean {
  return bytes.length > 0 && bytes[bytes.length - 1] !== 0x0a;
}

/**
 * True when kept blocks, placed after the sections, hold nothing a sync would act on and
 * read back as the same blocks: they start with a heading (so no text joins the last
 * section), and hold no edited or damaged section and no hand-written learning for this
 * project.
 */
function keptIsSettled(kept: string, slug: string): boolean {
  const first = kept.split("\n").find((line) => line.trim() !== "");
  if (first === undefined) return true;
  if (!/^ {0,3}#{1,6}(?:[ \t]|$)/.test(first)) return false;
  const parsed = parseMemoryFile(kept, { editedOnly: true });
  const ownName = memoryFileNameOf(slug);
  return (
    parsed.generated.length === 0 &&
    parsed.problems.length === 0 &&
    parsed.authored.every((section) => targetProjectOf(section.learning, ownName) !== slug)
  );
}

/** What an import of the hand-written learnings met at this sync needs to know next time. */
function watchedOf(
  wanted: ReadonlySet<string>,
  learnings: readonly LocatedLearning[],
  history: LearningHistory,
): SyncState["watched"] {
  if (wanted.size === 0) return [];
  const fingerprints = new Map<string, Set<string>>([...wanted].map((identity) => [identity, new Set()]));
  for (const item of learnings) fingerprints.get(identityOf(item.entry))?.add(contentFingerprint(item.entry));
  return [...wanted].map((identity) => {
    const current = history.current(identity);
    return {
      identity,
      fingerprints: [...fingerprints.get(identity)!],
      current: current === undefined ? null : { insight: current.insight, ts: current.ts },
    };
  });
}

/** Reads everything, decides everything, and leaves a state for the next sync when it can. */
async function runFull(context: RunContext): Promise<void> {
  const { report, steps, slug } = context;
  const text = context.learningsBytes.toString("utf8");
  const read = parseLearningLines(text, context.learningsFile, 0);
  report.warnings.push(...read.warnings);
  const learnings: LocatedLearning[] = read.entries;
  const ownName = memoryFileNameOf(slug);
  const previousText = context.memoryBytes?.toString("utf8");
  // Unedited sections are rebuilt from gstack anyway, so they need no decoding.
  const previous =
    previousText === undefined ? undefined : parseMemoryFile(previousText, { editedOnly: true });
  const history = historyOf(learnings);
  let wanted: ReadonlySet<string> = new Set();
  if (steps.import) {
    const sources = await readMemorySources(context.workspace, ownName, report.warnings);
    if (previous !== undefined) sources.push({ relative: ownName, parsed: previous });
    const result = planImportFrom({ slug, sources, timestamp: context.timestamp() }, history);
    const plan = result.plan;
    wanted = result.wanted;
    report.blocked.push(...plan.blocked);
    report.problems.push(...plan.problems);
    if (plan.append.length > 0) {
      const unterminated = endsUnterminated(context.learningsBytes);
      await appendLines(context.learningsFile, linesToAppend(plan.append, unterminated));
      let line = read.newlines + (unterminated ? 1 : 0);
      for (const entry of plan.append) learnings.push({ file: context.learningsFile, line: ++line, entry });
      report.imported = plan.append.length;
    }
  }
  if (!steps.export) return;
  const plan = planExportParts({ slug, learnings, previous });
  report.exported = plan.exported.length;
  report.pending = plan.pending;
  report.blocked.push(...plan.blocked);
  const rendered = renderMemoryFileBytes(slug, plan.exported, plan.keep, plan.underTitle);
  const bytes = rendered.bytes;
  if (context.memoryBytes === undefined || !context.memoryBytes.equals(bytes)) {
    await writeFileAtomic(context.memoryFile, bytes);
    report.written = true;
  }
  const settled =
    report.imported === 0 &&
    !endsUnterminated(context.learningsBytes) &&
    keptIsSettled(bytes.toString("utf8", rendered.sectionsEnd), slug);
  if (!settled) {
    await removeSyncState(context.statePath);
    return;
  }
  await writeSyncState(context.statePath, {
    v: 1,
    memoryFile: context.memoryFile,
    learnings: {
      size: context.learningsBytes.length,
      digest: digestBytes(context.learningsBytes),
      lines: read.newlines,
    },
    memory: {
      size: bytes.length,
      digest: digestBytes(bytes),
      sectionsStart: rendered.sectionsStart,
      sectionsEnd: rendered.sectionsEnd,
      exported: report.exported,
    },
    warnings: read.warnings,
    blocked: plan.blocked.map((item, index) => ({ ...item, ts: plan.blockedEntries[index]!.ts })),
    watched: watchedOf(wanted, learnings, history),
  });
}

/** True when the state describes the files as they are now (checked by size and digest). */
function stateHolds(state: SyncState, context: RunContext): boolean {
  const { learningsBytes, memoryBytes } = context;
  const size = state.learnings.size;
  if (state.memoryFile !== context.memoryFile || memoryBytes === undefined) return false;
  if (memoryBytes.length !== state.memory.size || learningsBytes.length < size) return false;
  if (size > 0 && learningsBytes[size - 1] !== 0x0a) return false;
  if (digestBytes(learningsBytes.subarray(0, size)) !== state.learnings.digest) return false;
  return digestBytes(memoryBytes) === state.memory.digest;
}

/**
 * The sync from the lines added since the state was left: only they are parsed, and only the
 * sections of the identities they touch are rewritten in the memory file's bytes. Gives the
 * same files and report as a full sync, or returns false (having changed nothing) when it
 * cannot know enough (a hand-written learning about an identity it does not follow).
 */
async function runIncremental(context: RunContext, state: SyncState): Promise<boolean> {
  const { report, steps, slug } = context;
  const memoryBytes = context.memoryBytes!;
  const tailText = context.learningsBytes.toString("utf8", state.learnings.size);
  const tail = parseLearningLines(tailText, context.learningsFile, state.learnings.lines);
  const watched = new Map(
    state.watched.map((item) => [
      item.identity,
      { fingerprints: new Set(item.fingerprints), current: item.current },
    ]),
  );
  for (const item of tail.entries) {
    const known = watched.get(identityOf(item.entry));
    if (known === undefined) continue;
    known.fingerprints.add(contentFingerprint(item.entry));
    if (known.current === null || replaces(known.current, item.entry)) {
      known.current = { insight: item.entry.insight, ts: item.entry.ts };
    }
  }

  let importPlan: ImportPlan | undefined;
  let wanted: ReadonlySet<string> | undefined;
  const memoryWarnings: ReadWarning[] = [];
  if (steps.import) {
    const sources = await readMemorySources(context.workspace, memoryFileNameOf(slug), memoryWarnings);
    let unknown = false;
    const history: LearningHistory = {
      current(identity) {
        const known = watched.get(identity);
        if (known === undefined) unknown = true;
        return known?.current ?? undefined;
      },
      fingerprints(identities) {
        const all = new Set<string>();
        for (const identity of identities) {
          const known = watched.get(identity);
          if (known === undefined) unknown = true;
          for (const fingerprint of known?.fingerprints ?? []) all.add(fingerprint);
        }
        return all;
      },
    };
    const result = planImportFrom({ slug, sources, timestamp: context.timestamp() }, history);
    if (unknown) return false;
    importPlan = result.plan;
    wanted = result.wanted;
  }

  const unterminated = endsUnterminated(context.learningsBytes);
  const added: LocatedLearning[] = [...tail.entries];
  let line = state.learnings.lines + tail.newlines + (unterminated ? 1 : 0);
  for (const entry of importPlan?.append ?? [])
    added.push({ file: context.learningsFile, line: ++line, entry });

  const blocked = new Map(state.blocked.map((item) => [identityOf(item), item]));
  const splicer = new SectionSplicer(memoryBytes, state.memory.sectionsStart, state.memory.sectionsEnd);
  if (steps.export) {
    const touched = new Map<string, LocatedLearning[]>();
    for (const item of added) {
      const identity = identityOf(item.entry);
      const items = touched.get(identity);
      if (items === undefined) touched.set(identity, [item]);
      else items.push(item);
    }
    try {
      for (const [identity, items] of touched) {
        const place = splicer.find(items[0]!.entry);
        let current: { ts?: unknown } | undefined = place.entry ?? blocked.get(identity);
        let winner: LocatedLearning | undefined;
        for (const item of items) {
          if (current !== undefined && !replaces(current, item.entry)) continue;
          current = item.entry;
          winner = item;
        }
        if (winner === undefined) continue;
        const { file, line: at, entry } = winner;
        const findings = screenLearning(entry);
        if (findings.length > 0) {
          blocked.set(identity, { file, line: at, key: entry.key, type: entry.type, findings, ts: entry.ts });
          splicer.remove(place);
        } else {
          blocked.delete(identity);
          splicer.put(place, entry);
        }
      }
    } catch {
      // The file did not read back as this package wrote it: a full sync decides.
      return false;
    }
  }

  report.warnings.push(...state.warnings, ...tail.warnings, ...memoryWarnings);
  if (importPlan !== undefined) {
    report.blocked.push(...importPlan.blocked);
    report.problems.push(...importPlan.problems);
    if (importPlan.append.length > 0) {
      await appendLines(context.learningsFile, linesToAppend(importPlan.append, unterminated));
      report.imported = importPlan.append.length;
    }
  }
  if (!steps.export) return true;

  const stillBlocked = [...blocked.values()].sort((left, right) => left.line - right.line);
  report.blocked.push(...stillBlocked.map(({ ts: _ts, ...item }) => item));
  report.exported = state.memory.exported + splicer.sectionsAdded;
  let memory = state.memory;
  if (splicer.changed) {
    const result = splicer.result();
    await writeFileAtomic(context.memoryFile, result.bytes);
    report.written = true;
    memory = {
      ...memory,
      size: result.bytes.length,
      digest: digestBytes(result.bytes),
      sectionsEnd: result.sectionsEnd,
      exported: report.exported,
    };
  }
  if (report.imported > 0 || unterminated) {
    await removeSyncState(context.statePath);
    return true;
  }
  const next: SyncState = {
    v: 1,
    memoryFile: context.memoryFile,
    learnings: {
      size: context.learningsBytes.length,
      digest: digestBytes(context.learningsBytes),
      lines: state.learnings.lines + tail.newlines,
    },
    memory,
    warnings: [...state.warnings, ...tail.warnings],
    blocked: stillBlocked,
    watched: [...watched]
      .filter(([identity]) => wanted === undefined || wanted.has(identity))
      .map(([identity, known]) => ({
        identity,
        fingerprints: [...known.fingerprints],
        current: known.current,
      })),
  };
  // A sync that found nothing new leaves the state as it was.
  if (JSON.stringify(next) !== JSON.stringify(state)) await writeSyncState(context.statePath, next);
  return true;
}

/**
 * Brings one project's learnings and OpenClaw's memory together: imports learnings the
 * OpenClaw side recorded or edited, then rewrites `memory/gstack-{slug}.md` from gstack's
 * current learnings. Holds a per-project lock, so concurrent syncs never lose an entry.
 */
export function syncProject(options: BridgeOptions): Promise<SyncReport> {
  return run(options, { import: true, export: true });
}

/** Only imports from OpenClaw's memory into gstack's learnings.jsonl (see {@link syncProject}). */
export function importProject(options: BridgeOptions): Promise<SyncReport> {
  return run(options, { import: true, export: false });
}

/**
 * Only writes `memory/gstack-{slug}.md` from gstack's learnings (see {@link syncProject}).
 * Edits and hand-written learnings in the old file that gstack does not hold are kept.
 */
export function exportProject(options: BridgeOptions): Promise<SyncReport> {
  return run(options, { import: false, export: true });
}
