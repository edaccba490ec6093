/**
 * The OpenClaw versions the gstack plugin is declared for, written once: exactly the versions
 * its real-gateway suites passed against. OpenClaw documents every plugin API as experimental
 * and asks plugins to declare the versions they tested, so the list is never open-ended; a
 * version joins it only after the suites passed against that version (COMPATIBILITY.md has the
 * table). The plugin's package.json `peerDependencies.openclaw` is `SUPPORTED_OPENCLAW_RANGE`,
 * its load-time check and `gstack-dispatch doctor` judge with `judgeOpenClaw`, and a test
 * holds the manifest, the table and the installed OpenClaw to this list.
 */
export const TESTED_OPENCLAW_VERSIONS: readonly string[] = ["2026.9.6"];

/** The tested versions as an npm range (`peerDependencies.openclaw`): exactly those versions. */
export const SUPPORTED_OPENCLAW_RANGE = TESTED_OPENCLAW_VERSIONS.join(" || ");

/** The tested versions as a person reads them (`2026.9.6`, `2026.9.6, 2026.9.7`). */
export const TESTED_OPENCLAW_TEXT = TESTED_OPENCLAW_VERSIONS.join(", ");

interface ParsedVersion {
  /** Without a leading `v` and without build metadata (`+…`), which npm's ranges ignore too. */
  text: string;
  release: [number, number, number];
}

function parse(version: string): ParsedVersion | undefined {
  const match = /^v?((\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?)(?:\+[0-9A-Za-z.-]+)?$/.exec(version.trim());
  if (!match?.[1]) return undefined;
  return { text: match[1], release: [Number(match[2]), Number(match[3]), Number(match[4])] };
}

function compareRelease(left: readonly number[], right: readonly number[]): number {
  for (let index = 0; index < 3; index++) {
    const difference = (left[index] ?? 0) - (right[index] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}

// (Each entry is a plain x.y.z release; the tests hold the list to that.)
const testedInOrder = TESTED_OPENCLAW_VERSIONS.flatMap((version) => parse(version) ?? []).sort(
  (left, right) => compareRelease(left.release, right.release),
);

/** The oldest tested version: the floor of the plugin's `openclaw.compat.pluginApi`. */
export const OLDEST_TESTED_OPENCLAW = testedInOrder[0]?.text ?? "";

/** The newest tested version: the one to install when the running one is outside. */
export const NEWEST_TESTED_OPENCLAW = testedInOrder[testedInOrder.length - 1]?.text ?? "";

/**
 * How a running OpenClaw stands to the tested versions:
 * - `tested`: one of them;
 * - `untested`: not one of them, and not older than the oldest (a newer release, one between
 *   two tested ones, a pre-release or correction of a tested one): the plugin loads and runs,
 *   on a plugin API it was not tried with;
 * - `older`: its release (`x.y.z`) is older than the oldest tested one, below the plugin's
 *   `openclaw.compat.pluginApi` floor, so OpenClaw itself neither installs nor loads the plugin;
 * - `unknown`: no version given, or not one written as `x.y.z`.
 */
export type OpenClawStanding = "tested" | "untested" | "older" | "unknown";

export interface OpenClawJudgement {
  standing: OpenClawStanding;
  /** The version judged, as given (trimmed); absent when none was given as text. */
  version?: string;
}

/** Judges a running OpenClaw's version (`api.runtime.version`, `openclaw --version`'s number). */
export function judgeOpenClaw(version: unknown): OpenClawJudgement {
  if (typeof version !== "string" || version.trim() === "") return { standing: "unknown" };
  const given = version.trim();
  const parsed = parse(given);
  if (!parsed) return { standing: "unknown", version: given };
  if (TESTED_OPENCLAW_VERSIONS.includes(parsed.text)) return { standing: "tested", version: given };
  return compareRelease(parsed.release, testedInOrder[0]?.release ?? [0, 0, 0]) < 0
    ? { standing: "older", version: given }
    : { standing: "untested", version: given };
}

/** The version in what `openclaw --version` prints (`OpenClaw 2026.9.6 (eb377ac)`). */
export function openclawVersionIn(printed: string): string | undefined {
  return /(?<![\d.])(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]*[0-9A-Za-z])?)(?!\d|\.\d)/.exec(printed)?.[1];
}
