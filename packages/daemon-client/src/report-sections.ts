/** The report sections the agent is asked to end with, in order. */
export const REPORT_SECTIONS = [
  "What shipped",
  "Decisions made",
  "Learnings logged",
  "Needs human judgment",
] as const;

/** The four sections of a completion report, as Markdown bodies (empty when unknown). */
export type ReportSections = Record<(typeof REPORT_SECTIONS)[number], string>;

const HEADING = /^#{1,4}\s+(.+?)\s*#*\s*$/;

function normalize(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z ]/g, "")
    .trim();
}

/**
 * Finds the report sections in an agent's final text. Headings of any level from `#` to
 * `####` count, in any order and letter case; text before the first one is ignored.
 * Returns undefined when none of the sections is there.
 */
export function parseReportSections(text: string): ReportSections | undefined {
  const wanted = new Map(REPORT_SECTIONS.map((section) => [normalize(section), section]));
  const sections: Partial<Record<string, string[]>> = {};
  let current: string[] | undefined;
  let found = false;
  for (const line of text.split(/\r?\n/)) {
    const heading = HEADING.exec(line);
    if (heading?.[1]) {
      const section = wanted.get(normalize(heading[1]));
      if (section) {
        current = [];
        sections[section] = current;
        found = true;
        continue;
      }
      if (found) current = undefined;
      continue;
    }
    current?.push(line);
  }
  if (!found) return undefined;
  const result = {} as ReportSections;
  for (const section of REPORT_SECTIONS) result[section] = (sections[section] ?? []).join("\n").trim();
  return result;
}

/** Bullet items of a Markdown section (`-`, `*` or `1.`), joined across wrapped lines. */
export function bulletItems(body: string): string[] {
  const items: string[] = [];
  for (const line of body.split(/\r?\n/)) {
    const bullet = /^\s*(?:[-*+]|\d+[.)])\s+(.*)$/.exec(line);
    if (bullet?.[1] !== undefined) items.push(bullet[1].trim());
    else if (line.trim() && items.length > 0) items[items.length - 1] += ` ${line.trim()}`;
  }
  return items.filter((item) => item.length > 0 && !/^(none|n\/a|nothing)\.?$/i.test(item));
}
