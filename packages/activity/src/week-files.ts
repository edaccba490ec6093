import { readdir } from "node:fs/promises";
import { basename } from "node:path";
import type { GstackLayout } from "@gstack/contracts";

const CANDIDATE = /^activity-(\d{4}-W\d{2})\.jsonl$/;

/**
 * The week a file name stands for, or undefined when the name is not a weekly activity
 * file. The answer is checked against the layout, so it always agrees with the names
 * {@link GstackLayout} hands out.
 */
export function weekOfFileName(layout: GstackLayout, name: string): string | undefined {
  const label = CANDIDATE.exec(name)?.[1];
  if (!label) return undefined;
  try {
    return basename(layout.activity.week(label)) === name ? label : undefined;
  } catch {
    return undefined;
  }
}

/** The weeks that have a file, oldest first. A missing activity folder has none. */
export async function listWeeks(layout: GstackLayout): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(layout.activity.dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  return names
    .map((name) => weekOfFileName(layout, name))
    .filter((week): week is string => week !== undefined)
    .sort();
}
