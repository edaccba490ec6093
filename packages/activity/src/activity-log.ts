import { access, readdir, readFile } from "node:fs/promises";
import {
  type ActivityEntry,
  appendJsonLines,
  ContractError,
  type GstackLayout,
  gstackLayout,
  isoWeekOf,
  type LayoutEnv,
  LockTimeoutError,
  parseJson,
  parseJsonLines,
  parseValue,
  resolveGstackHome,
  withFileLock,
} from "@gstack/contracts";
import { ActivityError } from "./activity-error";
import { type ActivityFilter, filterNeedles, matchesFilter, sortByTime } from "./activity-filter";
import { type ActivitySummary, summarizeActivity } from "./activity-summary";
import { entryIdentity } from "./entry-identity";
import { scanLines } from "./line-scan";
import { timelineToEntries } from "./timeline-entries";
import { listWeeks } from "./week-files";
import { assertWeekLabel, lastWeeks, weekEnd, weekStart } from "./week-range";

const HOUR_MS = 3_600_000;
/** Lines stay well under PIPE_BUF (4 KiB), so one append can never be split. */
export const MAX_ENTRY_BYTES = 4000;

/** Where the log lives and how it tells time. */
export interface ActivityLogOptions {
  /** The gstack state root; defaults to the one the environment names (`GSTACK_HOME`, …). */
  root?: string;
  /** Environment for resolving the root; defaults to `process.env`. */
  env?: LayoutEnv;
  /** The clock; defaults to the system clock. */
  now?: () => Date;
  /**
   * How long after a week ends it still takes ordinary appends, for work that finished
   * just before midnight on Sunday and is written just after. Default 24 hours.
   */
  graceHours?: number;
  /** How long a backfill or import waits for another one to finish. Default 30 seconds. */
  lockTimeoutMs?: number;
}

/** Options for {@link ActivityLog.append}. */
export interface AppendOptions {
  /**
   * Allows entries for weeks that are already closed. Backfilled entries are added under
   * the import lock and only when no entry with the same identity (project, session,
   * skill, time) is recorded yet, so a backfill can be repeated safely.
   */
  backfill?: boolean;
}

/** What an append wrote. */
export interface AppendResult {
  /** Entries written. */
  added: ActivityEntry[];
  /** Entries left out because the same work was already recorded (backfill only). */
  skipped: number;
  /** Weeks that received entries. */
  weeks: string[];
}

/** A line of a weekly file (or a timeline) that could not be used. Never fatal. */
export interface ReadProblem {
  file: string;
  /** 1-based; 0 when the problem is the file or folder itself (e.g. an unusable project folder name). */
  line: number;
  message: string;
}

/**
 * Which entries to read. The span is the intersection of what is given: one `week`, the
 * last `weeks` weeks (including the current one), `since` (inclusive) and `until`
 * (exclusive). Nothing given means every week. Only the files of those weeks are read.
 */
export interface ActivityQuery extends ActivityFilter {
  week?: string;
  weeks?: number;
}

/** Entries found, oldest first, with any unreadable lines met on the way. */
export interface QueryResult {
  entries: ActivityEntry[];
  /**
   * Lines that could not be read. A query filtered by project, skill or dispatcher skips
   * lines that cannot hold the value it looks for without parsing them, broken or not.
   */
  problems: ReadProblem[];
  /** The weeks whose files were read. */
  weeksRead: string[];
  /** The span the query covered, when it was bounded. */
  since?: Date;
  until?: Date;
}

/** What one project's timeline gave. */
export interface TimelineImportReport {
  project: string;
  file: string;
  completed: number;
  added: number;
  skipped: number;
}

/** The outcome of {@link ActivityLog.importTimeline}. */
export interface ImportResult {
  projects: TimelineImportReport[];
  added: number;
  skipped: number;
  problems: ReadProblem[];
}

/** The weekly activity index under one gstack state root. */
export interface ActivityLog {
  readonly root: string;
  readonly layout: GstackLayout;
  /** Validates and appends entries, each to the week of its own timestamp. */
  append(entries: readonly unknown[], options?: AppendOptions): Promise<AppendResult>;
  /** Every entry of one week, oldest first. */
  readWeek(week: string): Promise<QueryResult>;
  /** Entries matching a query, oldest first. */
  query(query?: ActivityQuery): Promise<QueryResult>;
  /** The query's entries summarised: sessions, time, skills and artifacts per project. */
  summarize(query?: ActivityQuery): Promise<QueryResult & { summary: ActivitySummary }>;
  /** The latest entry matching the filter, reading newest weeks first and stopping at the first hit. */
  last(filter: ActivityFilter): Promise<{ entry: ActivityEntry | undefined; problems: ReadProblem[] }>;
  /** The weeks that have a file, oldest first. */
  weeks(): Promise<string[]>;
  /** Imports completed events from gstack timelines: one project, or all of them. */
  importTimeline(options?: { project?: string; dryRun?: boolean }): Promise<ImportResult>;
}

/**
 * Opens the activity log under a gstack state root (by default the one the environment
 * names). Nothing is read or created until a method is called.
 */
export function createActivityLog(options: ActivityLogOptions = {}): ActivityLog {
  const root = options.root ?? resolveGstackHome(options.env ?? process.env);
  const layout = gstackLayout(root);
  const now = options.now ?? (() => new Date());
  const graceMs = (options.graceHours ?? 24) * HOUR_MS;
  const lockOptions = options.lockTimeoutMs === undefined ? {} : { timeoutMs: options.lockTimeoutMs };

  function validate(values: readonly unknown[]): { entry: ActivityEntry; week: string; line: string }[] {
    return values.map((value, index) => {
      const entry = parseValue("activity-entry", value, { source: `entry ${index + 1}` });
      const line = JSON.stringify(entry);
      if (Buffer.byteLength(line) > MAX_ENTRY_BYTES) {
        throw new ActivityError(
          "entry-too-large",
          `entry ${index + 1} is ${Buffer.byteLength(line)} bytes as JSON; an entry must stay under ${MAX_ENTRY_BYTES}`,
        );
      }
      const time = Date.parse(entry.ts);
      if (time > now().getTime() + graceMs) {
        throw new ActivityError(
          "future-entry",
          `entry ${index + 1} is dated ${entry.ts}, in the future; check the clock or the timestamp`,
        );
      }
      return { entry, week: isoWeekOf(new Date(time)), line };
    });
  }

  /** The first week that still takes ordinary appends. */
  function firstOpenWeek(): string {
    return isoWeekOf(new Date(now().getTime() - graceMs));
  }

  async function readIdentities(week: string): Promise<Set<string>> {
    const identities = new Set<string>();
    const text = await readOptional(layout.activity.week(week));
    for (const raw of text.split("\n")) {
      if (raw.trim() === "") continue;
      try {
        const value = JSON.parse(raw) as Partial<ActivityEntry>;
        if (
          typeof value.project === "string" &&
          typeof value.skill === "string" &&
          typeof value.ts === "string"
        ) {
          identities.add(entryIdentity(value as ActivityEntry));
        }
      } catch {
        // An unreadable line has no identity; queries report it.
      }
    }
    return identities;
  }

  async function addMissing(
    items: readonly { entry: ActivityEntry; week: string; line: string }[],
    dryRun: boolean,
  ): Promise<{ added: { entry: ActivityEntry; week: string }[]; skipped: number }> {
    return withFileLock(
      layout.activity.importLock,
      async () => {
        const byWeek = groupByWeek(items);
        const added: { entry: ActivityEntry; week: string }[] = [];
        let skipped = 0;
        for (const [week, weekItems] of byWeek) {
          const known = await readIdentities(week);
          const fresh = weekItems.filter((item) => {
            const identity = entryIdentity(item.entry);
            if (known.has(identity)) return false;
            known.add(identity);
            return true;
          });
          skipped += weekItems.length - fresh.length;
          if (fresh.length === 0) continue;
          if (!dryRun)
            await appendJsonLines(
              layout.activity.week(week),
              fresh.map((item) => item.entry),
            );
          added.push(...fresh);
        }
        return { added, skipped };
      },
      lockOptions,
    ).catch((error: unknown) => {
      if (!LockTimeoutError.isInstance(error)) throw error;
      throw new ActivityError(
        "import-busy",
        `another import${error.holderPid ? ` (pid ${error.holderPid})` : ""} holds ${error.path}; try again when it has finished`,
        { cause: error },
      );
    });
  }

  async function readEntries(
    week: string,
    filter: ActivityFilter,
    into: { entries: ActivityEntry[]; problems: ReadProblem[] },
  ): Promise<void> {
    const file = layout.activity.week(week);
    for (const { text, line } of scanLines(await readOptional(file), filterNeedles(filter))) {
      try {
        const entry = parseJson("activity-entry", text, { source: `${file}:${line}` });
        if (matchesFilter(entry, filter)) into.entries.push(entry);
      } catch (error) {
        if (!ContractError.isInstance(error)) throw error;
        into.problems.push({ file, line, message: oneLine(error) });
      }
    }
  }

  async function selectWeeks(query: ActivityQuery): Promise<{ weeks: string[]; since?: Date; until?: Date }> {
    let since = query.since;
    let until = query.until;
    const narrow = (start: Date, end: Date) => {
      if (!since || start > since) since = start;
      if (!until || end < until) until = end;
    };
    if (query.week !== undefined) narrow(weekStart(query.week), weekEnd(query.week));
    if (query.weeks !== undefined) {
      const span = lastWeeks(now(), query.weeks);
      narrow(weekStart(span[0]!), weekEnd(span.at(-1)!));
    }
    if (since && until && since >= until) {
      throw new ActivityError(
        "invalid-range",
        `the range ends (${until.toISOString()}) before it starts (${since.toISOString()})`,
      );
    }
    const first = since ? isoWeekOf(since) : undefined;
    const last = until ? isoWeekOf(new Date(until.getTime() - 1)) : undefined;
    const weeks = (await listWeeks(layout)).filter(
      (week) => (first === undefined || week >= first) && (last === undefined || week <= last),
    );
    return { weeks, ...(since ? { since } : {}), ...(until ? { until } : {}) };
  }

  async function query(request: ActivityQuery = {}): Promise<QueryResult> {
    const { weeks, since, until } = await selectWeeks(request);
    const filter: ActivityFilter = { ...request, ...(since ? { since } : {}), ...(until ? { until } : {}) };
    const found = { entries: [] as ActivityEntry[], problems: [] as ReadProblem[] };
    for (const week of weeks) await readEntries(week, filter, found);
    return {
      entries: sortByTime(found.entries),
      problems: found.problems,
      weeksRead: weeks,
      ...(since ? { since } : {}),
      ...(until ? { until } : {}),
    };
  }

  return {
    root,
    layout,

    async append(values, appendOptions = {}) {
      const items = validate(values);
      if (appendOptions.backfill) {
        const { added, skipped } = await addMissing(items, false);
        return {
          added: added.map((item) => item.entry),
          skipped,
          weeks: unique(added.map((item) => item.week)),
        };
      }
      const open = firstOpenWeek();
      items.forEach((item, index) => {
        if (item.week < open) {
          throw new ActivityError(
            "past-week",
            `entry ${index + 1} belongs to ${item.week}, a closed week (appends go to ${open} or later); use backfill to add to past weeks`,
          );
        }
      });
      const byWeek = groupByWeek(items);
      for (const [week, weekItems] of byWeek) {
        await appendJsonLines(
          layout.activity.week(week),
          weekItems.map((item) => item.entry),
        );
      }
      return { added: items.map((item) => item.entry), skipped: 0, weeks: [...byWeek.keys()] };
    },

    async readWeek(week) {
      const file = layout.activity.week(assertWeekLabel(week));
      const { entries, problems } = parseJsonLines("activity-entry", await readOptional(file), {
        source: file,
      });
      return {
        entries: sortByTime(entries.map((item) => item.value)),
        problems: problems.map((problem) => ({ file, line: problem.line, message: oneLine(problem.error) })),
        weeksRead: [week],
        since: weekStart(week),
        until: weekEnd(week),
      };
    },

    query,

    async summarize(request = {}) {
      const result = await query(request);
      return { ...result, summary: summarizeActivity(result.entries) };
    },

    async last(filter) {
      const weeks = (await selectWeeks(filter)).weeks.reverse();
      const problems: ReadProblem[] = [];
      for (const week of weeks) {
        const found = { entries: [] as ActivityEntry[], problems };
        await readEntries(week, filter, found);
        if (found.entries.length > 0) return { entry: sortByTime(found.entries).at(-1), problems };
      }
      return { entry: undefined, problems };
    },

    weeks: () => listWeeks(layout),

    async importTimeline(importOptions = {}) {
      const projects = importOptions.project ? [importOptions.project] : await listProjects(layout);
      const problems: ReadProblem[] = [];
      const reports: TimelineImportReport[] = [];
      const pending: { project: string; item: { entry: ActivityEntry; week: string; line: string } }[] = [];
      for (const project of projects) {
        let file: string;
        try {
          file = layout.project(project).timeline;
        } catch (error) {
          if (!ContractError.isInstance(error) || importOptions.project !== undefined) throw error;
          problems.push({ file: layout.projects, line: 0, message: oneLine(error) });
          continue;
        }
        const text = await readOptional(file);
        if (text === "" && importOptions.project !== undefined && !(await exists(file))) {
          throw new ActivityError("no-timeline", `no gstack timeline for project ${project} at ${file}`);
        }
        const parsed = parseJsonLines("timeline-event", text, { source: file });
        for (const problem of parsed.problems) {
          problems.push({ file, line: problem.line, message: oneLine(problem.error) });
        }
        const converted = timelineToEntries(
          project,
          parsed.entries.map((item) => ({ event: item.value, line: item.line })),
          { source: file },
        );
        for (const problem of converted.problems) problems.push({ file, ...problem });
        for (const { entry, line } of converted.entries) {
          try {
            pending.push({ project, item: validate([entry])[0]! });
          } catch (error) {
            if (!ActivityError.isInstance(error) && !ContractError.isInstance(error)) throw error;
            problems.push({ file, line, message: error.message.replace(/^entry 1/, "entry") });
          }
        }
        reports.push({ project, file, completed: converted.entries.length, added: 0, skipped: 0 });
      }
      const { added } = await addMissing(
        pending.map((item) => item.item),
        importOptions.dryRun ?? false,
      );
      const addedPerProject = new Map<string, number>();
      for (const { entry } of added)
        addedPerProject.set(entry.project, (addedPerProject.get(entry.project) ?? 0) + 1);
      const pendingPerProject = new Map<string, number>();
      for (const { project } of pending)
        pendingPerProject.set(project, (pendingPerProject.get(project) ?? 0) + 1);
      for (const report of reports) {
        report.added = addedPerProject.get(report.project) ?? 0;
        report.skipped = (pendingPerProject.get(report.project) ?? 0) - report.added;
      }
      return {
        projects: reports,
        added: added.length,
        skipped: pending.length - added.length,
        problems,
      };
    },
  };
}

function groupByWeek<T extends { week: string }>(items: readonly T[]): Map<string, T[]> {
  const byWeek = new Map<string, T[]>();
  for (const item of items) {
    const list = byWeek.get(item.week);
    if (list) list.push(item);
    else byWeek.set(item.week, [item]);
  }
  return byWeek;
}

function unique(values: readonly string[]): string[] {
  return [...new Set(values)];
}

function oneLine(error: Error): string {
  return error.message.replace(/\n\s*-?\s*/g, "; ");
}

async function readOptional(file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "";
    throw error;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}

async function listProjects(layout: GstackLayout): Promise<string[]> {
  try {
    const entries = await readdir(layout.projects, { withFileTypes: true });
    return entries
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
      .sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
}
