import { GeneratorError } from "./generator-error";

/** The fourth part of a gstack version must stay below this to fit the patch number. */
export const MICRO_LIMIT = 1000;

/** gstack's four-part version, e.g. `1.68.3.12`. */
export interface GstackVersion {
  major: number;
  minor: number;
  patch: number;
  micro: number;
}

const FOUR_PART = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/;
const SEMVER = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/;
const MAX_PATCH_PREFIX = Math.floor(Number.MAX_SAFE_INTEGER / MICRO_LIMIT) - 1;

function versionError(message: string, source?: string): GeneratorError {
  return new GeneratorError({ code: "version", message, ...(source ? { file: source } : {}) });
}

/** Parses gstack's VERSION text (`1.68.3.0`, surrounding whitespace allowed). */
export function parseGstackVersion(text: string, source?: string): GstackVersion {
  const match = FOUR_PART.exec(text.trim());
  if (!match)
    throw versionError(
      `${JSON.stringify(text.trim())} is not a four-part gstack version such as 1.68.3.0`,
      source,
    );
  const [major, minor, patch, micro] = match.slice(1).map(Number) as [number, number, number, number];
  if (micro >= MICRO_LIMIT) {
    throw versionError(
      `the fourth part of ${text.trim()} must be below ${MICRO_LIMIT} to map onto semver`,
      source,
    );
  }
  if (patch > MAX_PATCH_PREFIX || !Number.isSafeInteger(major) || !Number.isSafeInteger(minor)) {
    throw versionError(`${text.trim()} has a part too large to map onto semver`, source);
  }
  return { major, minor, patch, micro };
}

/**
 * Maps gstack's four-part version onto semver for ClawHub: `A.B.C.D` becomes
 * `A.B.(C×1000+D)`, so `1.68.3.0` is `1.68.3000` and `1.68.3.12` is `1.68.3012`. The map
 * keeps order (1.68.3.12 sorts after 1.68.3.2, and every 1.68.4.x after every 1.68.3.x),
 * needs no pre-release or build tag (a pre-release sorts before its release; build
 * metadata is ignored in ordering), and reads back without loss. D must stay below 1000.
 */
export function toSemver(version: GstackVersion | string): string {
  const parts = typeof version === "string" ? parseGstackVersion(version) : version;
  if (parts.micro >= MICRO_LIMIT || parts.micro < 0) {
    throw versionError(`the fourth version part ${parts.micro} must be between 0 and ${MICRO_LIMIT - 1}`);
  }
  return `${parts.major}.${parts.minor}.${parts.patch * MICRO_LIMIT + parts.micro}`;
}

/** The inverse of {@link toSemver}: `1.68.3012` gives `1.68.3.12`. */
export function fromSemver(semver: string): string {
  const match = SEMVER.exec(semver.trim());
  if (!match) throw versionError(`${JSON.stringify(semver)} is not a plain semver version such as 1.68.3000`);
  const [major, minor, patch] = match.slice(1).map(Number) as [number, number, number];
  return `${major}.${minor}.${Math.floor(patch / MICRO_LIMIT)}.${patch % MICRO_LIMIT}`;
}

/** Semver precedence of two plain `X.Y.Z` versions: negative, zero or positive. */
export function compareSemver(left: string, right: string): number {
  const a = left.split(".").map(Number);
  const b = right.split(".").map(Number);
  for (let index = 0; index < 3; index++) {
    const difference = (a[index] ?? 0) - (b[index] ?? 0);
    if (difference !== 0) return Math.sign(difference);
  }
  return 0;
}
