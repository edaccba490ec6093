/**
 * Every path into `skillsFolder` that an installed skill's text names, with trailing
 * punctuation and quotes removed, deduplicated and sorted.
 */
export function installedPathsIn(content: string, skillsFolder: string): string[] {
  const escaped = skillsFolder.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const pattern = new RegExp(`${escaped}(?:/[A-Za-z0-9_.\\-]+)*`, "g");
  const found = new Set<string>();
  for (const match of content.matchAll(pattern)) found.add(match[0].replace(/[.]+$/, ""));
  return [...found].sort();
}
