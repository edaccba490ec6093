import type { Bundle } from "./generate-bundle";

/** A skill that asks for a newer OpenClaw than the one it is installed into. */
export interface VersionMismatch {
  skill: string;
  requires: string;
  running: string;
}

function parts(version: string): number[] | undefined {
  const match = /^v?(\d+(?:\.\d+)*)/.exec(version.trim());
  return match?.[1]?.split(".").map(Number);
}

/** Compares dotted numeric versions (`2026.3.0`, `1.8`); missing parts count as 0. */
export function compareDottedVersions(left: string, right: string): number {
  const a = parts(left) ?? [];
  const b = parts(right) ?? [];
  for (let index = 0; index < Math.max(a.length, b.length); index++) {
    const difference = (a[index] ?? 0) - (b[index] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}

/**
 * Lists the skills whose `metadata.gstack.min_openclaw_version` is newer than the running
 * OpenClaw. OpenClaw itself has no such check for skills, so the installer makes it.
 */
export function findVersionMismatches(bundle: Bundle, running: string): VersionMismatch[] {
  const mismatches: VersionMismatch[] = [];
  for (const [path, content] of bundle.files) {
    if (!path.endsWith("/SKILL.md")) continue;
    const line = /^metadata: (.*)$/m.exec(content)?.[1];
    if (!line) continue;
    const requires = (JSON.parse(line) as { gstack?: { min_openclaw_version?: unknown } }).gstack
      ?.min_openclaw_version;
    if (typeof requires !== "string" || parts(requires) === undefined) continue;
    if (compareDottedVersions(running, requires) < 0) {
      mismatches.push({ skill: path.split("/")[1] ?? path, requires, running });
    }
  }
  return mismatches;
}
