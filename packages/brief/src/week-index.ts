import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { type GstackLayout, writeFileAtomic } from "@gstack/contracts";

/** What one weekly activity file held when it was last read: its size, its time, its projects. */
interface WeekEntry {
  size: number;
  mtimeMs: number;
  /** The projects its lines name; null when a line could not be read for it (always read then). */
  projects: string[] | null;
}

interface WeekIndexFile {
  version: 1;
  weeks: Record<string, WeekEntry>;
}

const PROJECT_FIELD = /"project"\s*:\s*"([A-Za-z0-9._-]+)"/;

/**
 * The projects a weekly file's lines name, or null when any non-empty line does not show its
 * project plainly (an escape, a broken line): such a week is never skipped, so the index can only
 * spare reads a full read would find nothing in.
 */
export function projectsOfWeek(text: string): string[] | null {
  const projects = new Set<string>();
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const found = PROJECT_FIELD.exec(line);
    if (!found || line.includes("\\")) return null;
    projects.add(found[1]!);
  }
  return [...projects].sort();
}

/**
 * A cache beside the weekly files (`activity/.brief-week-projects.json`) of which projects each
 * week names, kept per file size and modification time: a week whose file is unchanged and does
 * not name the project is not read again. An append changes the size, so that week is read anew.
 * Losing or breaking the cache only costs reads.
 */
export async function openWeekIndex(layout: GstackLayout) {
  const path = join(layout.activity.dir, ".brief-week-projects.json");
  let file: WeekIndexFile = { version: 1, weeks: {} };
  try {
    const parsed = JSON.parse(await readFile(path, "utf8")) as WeekIndexFile;
    if (parsed?.version === 1 && typeof parsed.weeks === "object" && parsed.weeks !== null) file = parsed;
  } catch {
    // No cache yet, or an unreadable one: every week is read and the cache written again.
  }
  let changed = false;
  return {
    /** False only when the week's unchanged file is known not to name the project. */
    async mayHold(week: string, project: string): Promise<boolean> {
      const weekFile = layout.activity.week(week);
      let info: { size: number; mtimeMs: number };
      try {
        info = await stat(weekFile);
      } catch {
        return true;
      }
      const known = file.weeks[week];
      if (known && known.size === info.size && known.mtimeMs === info.mtimeMs) {
        return known.projects === null || known.projects.includes(project);
      }
      let text: string;
      try {
        text = await readFile(weekFile, "utf8");
      } catch {
        return true;
      }
      const after = await stat(weekFile).catch(() => undefined);
      // Written to while read: remembered only when the file is as it was read.
      if (
        after &&
        after.size === info.size &&
        after.mtimeMs === info.mtimeMs &&
        Buffer.byteLength(text) === info.size
      ) {
        const projects = projectsOfWeek(text);
        file.weeks[week] = { size: info.size, mtimeMs: info.mtimeMs, projects };
        changed = true;
        return projects === null || projects.includes(project);
      }
      return true;
    },
    /** Writes the cache when it learned something; a folder it cannot write to is no error. */
    async save(): Promise<void> {
      if (!changed) return;
      await writeFileAtomic(path, JSON.stringify(file)).catch(() => undefined);
      changed = false;
    },
  };
}
