import { mkdir, readFile } from "node:fs/promises";
import {
  appendLines,
  gstackLayout,
  openClawLayout,
  resolveGstackHome,
  resolveOpenClawWorkspace,
  writeFileAtomic,
} from "@gstack/contracts";
import { withFileLock } from "./file-lock";
import type { LocatedLearning, ReadWarning } from "./learning-entry";
import { parseMemoryFile } from "./memory-file";
import { planExport } from "./plan-export";
import {
  type BlockedLearning,
  type ImportProblem,
  type MemorySource,
  memoryFileNameOf,
  planImport,
} from "./plan-import";
import { listMemoryFiles, readLearningsFile, readTextIfPresent } from "./workspace-files";

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
      const read = await readLearningsFile(project.learnings);
      report.warnings.push(...read.warnings);
      const learnings: LocatedLearning[] = read.entries;
      const ownName = memoryFileNameOf(options.project);
      const previousText = await readTextIfPresent(memoryFile);
      // Unedited sections are rebuilt from gstack anyway, so they need no decoding.
      const previous =
        previousText === undefined ? undefined : parseMemoryFile(previousText, { editedOnly: true });
      if (steps.import) {
        const sources = await readMemorySources(workspace, ownName, report.warnings);
        if (previous !== undefined) sources.push({ relative: ownName, parsed: previous });
        const plan = planImport({
          slug: options.project,
          existing: learnings,
          sources,
          timestamp: (options.now?.() ?? new Date()).toISOString(),
        });
        report.blocked.push(...plan.blocked);
        report.problems.push(...plan.problems);
        if (plan.append.length > 0) {
          const lines = plan.append.map((entry) => JSON.stringify(entry));
          // A last line without its newline (a writer that crashed) must not swallow ours.
          const unterminated = read.text !== "" && !read.text.endsWith("\n");
          await appendLines(project.learnings, unterminated ? ["", ...lines] : lines);
          let line = read.text.split("\n").length - (unterminated ? 0 : 1);
          for (const entry of plan.append) learnings.push({ file: project.learnings, line: ++line, entry });
          report.imported = plan.append.length;
        }
      }
      if (steps.export) {
        const plan = planExport({ slug: options.project, learnings, previous });
        report.exported = plan.exported;
        report.pending = plan.pending;
        report.blocked.push(...plan.blocked);
        if (plan.text !== previousText) {
          await writeFileAtomic(memoryFile, plan.text);
          report.written = true;
        }
      }
      return report;
    },
    lockOptions,
  );
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
