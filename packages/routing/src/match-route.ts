import { createRequire } from "node:module";
import type { RouteMatch } from "@gstack/contracts";
import type Picomatch from "picomatch";
import type { RoutingTask } from "./routing-task";

/** The keys a route may match on, in the order they are checked and explained. */
export const routeMatchKeys = ["project", "task_type", "files", "branch", "agent"] as const;
export type RouteMatchKey = (typeof routeMatchKeys)[number];

/** The outcome of one key of a route's `match` against a task. */
export interface KeyCheck {
  key: RouteMatchKey;
  held: boolean;
  /** The route's patterns for this key. */
  patterns: readonly string[];
  /** What the task gave for this key (undefined when it gave nothing). */
  actual: string | readonly string[] | undefined;
  /** A sentence saying why the key held or failed. */
  reason: string;
}

/** How one route fared against a task. */
export interface RouteCheck {
  matched: boolean;
  /** One check per key present in the route's `match`, in {@link routeMatchKeys} order. */
  checks: readonly KeyCheck[];
}

const matcherCache = new Map<string, (input: string) => boolean>();

let picomatch: typeof Picomatch | undefined;

/**
 * picomatch, loaded the first time a glob is compiled. The literal `require("picomatch")` is
 * for bundlers: in a bundle (the OpenClaw plugin's commands) it becomes the bundled copy. This
 * package's own build keeps picomatch outside, and an ES module under Node has no `require`,
 * so that call throws there and a `require` made for this file loads it instead.
 */
function loadPicomatch(): typeof Picomatch {
  if (picomatch === undefined) {
    try {
      picomatch = require("picomatch") as typeof Picomatch;
    } catch {
      picomatch = createRequire(import.meta.url)("picomatch") as typeof Picomatch;
    }
  }
  return picomatch;
}

/**
 * A pattern without glob syntax: names such as `security` or `acme-baku` and plain paths such
 * as `docs/README.md`. picomatch compiles it to an anchored expression of its characters, so
 * comparing strings gives the same answer without loading picomatch.
 */
const LITERAL = /^[A-Za-z0-9_-]+(?:[./][A-Za-z0-9_-]+)*$/;

/**
 * A matcher for a literal pattern: string equality, or when ignoring case the same anchored
 * expression picomatch would build (the `i` flag without `u`, which folds ASCII letters only).
 */
function literalMatcher(pattern: string, nocase: boolean): (input: string) => boolean {
  if (!nocase) return (input) => input === pattern;
  const expression = new RegExp(`^${pattern.replaceAll(".", "\\.")}$`, "i");
  return (input) => expression.test(input);
}

/** A matcher for `pattern` as picomatch reads it (dotfiles included). */
export function matcherFor(pattern: string, nocase: boolean): (input: string) => boolean {
  const cacheKey = `${nocase ? "i" : "s"}:${pattern}`;
  let matcher = matcherCache.get(cacheKey);
  if (!matcher) {
    if (LITERAL.test(pattern)) {
      matcher = literalMatcher(pattern, nocase);
    } else {
      // The compiled expression, tested directly: paths are already normalised to '/', and
      // this avoids the per-call bookkeeping of picomatch's matcher function. A table whose
      // checked patterns are all literal never loads picomatch.
      const expression = loadPicomatch().makeRe(pattern, { dot: true, nocase });
      matcher = (input: string) => expression.test(input);
    }
    if (matcherCache.size > 10_000) matcherCache.clear();
    matcherCache.set(cacheKey, matcher);
  }
  return matcher;
}

/** Normalises a touched path: `\` becomes `/`, leading `./` segments go. */
export function normalizeTaskPath(path: string): string {
  let normalized = path.replaceAll("\\", "/");
  while (normalized.startsWith("./")) normalized = normalized.slice(2);
  return normalized;
}

function asList(value: string | readonly string[] | undefined): readonly string[] {
  if (value === undefined) return [];
  return typeof value === "string" ? [value] : value;
}

function quoteAll(values: readonly string[]): string {
  return values.map((value) => JSON.stringify(value)).join(", ");
}

function checkSingle(
  key: Exclude<RouteMatchKey, "files">,
  patterns: readonly string[],
  actual: string | undefined,
  nocase: boolean,
): KeyCheck {
  const label = key.replace("_", " ");
  if (actual === undefined || actual === "") {
    return { key, held: false, patterns, actual: undefined, reason: `the task gives no ${label}` };
  }
  const hit = patterns.find((pattern) => matcherFor(pattern, nocase)(actual));
  return hit === undefined
    ? {
        key,
        held: false,
        patterns,
        actual,
        reason: `${label} ${JSON.stringify(actual)} matches none of ${quoteAll(patterns)}`,
      }
    : {
        key,
        held: true,
        patterns,
        actual,
        reason: `${label} ${JSON.stringify(actual)} matches ${JSON.stringify(hit)}`,
      };
}

function checkFiles(patterns: readonly string[], files: readonly string[] | undefined): KeyCheck {
  if (files === undefined || files.length === 0) {
    return { key: "files", held: false, patterns, actual: files, reason: "the task names no files" };
  }
  const normalized = files.map(normalizeTaskPath);
  for (const path of normalized) {
    const hit = patterns.find((pattern) => matcherFor(normalizeTaskPath(pattern), false)(path));
    if (hit !== undefined) {
      return {
        key: "files",
        held: true,
        patterns,
        actual: files,
        reason: `file ${JSON.stringify(path)} matches ${JSON.stringify(hit)}`,
      };
    }
  }
  const count =
    normalized.length === 1 ? `the file ${JSON.stringify(normalized[0])}` : `${normalized.length} files`;
  return {
    key: "files",
    held: false,
    patterns,
    actual: files,
    reason: `none of ${count} matches ${quoteAll(patterns)}`,
  };
}

/**
 * Checks a route's `match` against a task. Every key present must hold; values are glob
 * patterns (picomatch, dotfiles included); `task_type` and `agent` ignore case; `files`
 * holds when any touched path matches any pattern. All keys are checked, so the result can
 * say every reason a route failed, not only the first. An empty `match` matches every task.
 */
export function matchRoute(match: RouteMatch, task: RoutingTask): RouteCheck {
  const checks: KeyCheck[] = [];
  for (const key of routeMatchKeys) {
    const value = match[key];
    if (value === undefined) continue;
    const patterns = asList(value);
    if (key === "files") checks.push(checkFiles(patterns, task.files));
    else checks.push(checkSingle(key, patterns, task[key], key === "task_type" || key === "agent"));
  }
  return { matched: checks.every((check) => check.held), checks };
}
