import { type KeyCheck, matchRoute } from "./match-route";
import type { RoutingSource, RoutingWarning } from "./routing-source";
import type { RoutingTable } from "./routing-table";
import type { RoutingTask } from "./routing-task";

/** How one route of the table fared, for explaining a result. */
export interface RouteExplanation {
  /** Position of the route in its source (0-based). */
  index: number;
  /** The route's `name`, or `routes[i]` when it has none. */
  name: string;
  /** Line the route starts on in its source, when known. */
  line?: number;
  matched: boolean;
  checks: readonly KeyCheck[];
  /** The checks that failed; empty for a matching route. */
  failed: readonly KeyCheck[];
  load: readonly string[];
  skills: readonly string[];
}

/** What a task should load and use, and why. */
export interface RoutingResult {
  /** Context to load, from every matching route in file order, without duplicates. */
  load: string[];
  /** Skills to use, from every matching route in file order, without duplicates. */
  skills: string[];
  /** Which file the routes came from (`none` when there was no routing configuration). */
  source: RoutingSource;
  /** The routes that matched, in file order. */
  matched: RouteExplanation[];
  /** The routes that did not, each with the keys that failed. */
  unmatched: RouteExplanation[];
  warnings: readonly RoutingWarning[];
}

function appendUnique(target: string[], seen: Set<string>, values: readonly string[] | undefined): void {
  for (const value of values ?? []) {
    if (seen.has(value)) continue;
    seen.add(value);
    target.push(value);
  }
}

/**
 * Resolves a task against a routing table: every route whose `match` holds contributes its
 * `load` and `skills`, in file order, each entry kept once (at its first position). Pure.
 */
export function resolveRoutes(table: RoutingTable, task: RoutingTask): RoutingResult {
  const load: string[] = [];
  const skills: string[] = [];
  const seenLoad = new Set<string>();
  const seenSkills = new Set<string>();
  const matched: RouteExplanation[] = [];
  const unmatched: RouteExplanation[] = [];
  table.routes.forEach((route, index) => {
    const check = matchRoute(route.match, task);
    const explanation: RouteExplanation = {
      index,
      name: route.name ?? `routes[${index}]`,
      ...(route.line === undefined ? {} : { line: route.line }),
      matched: check.matched,
      checks: check.checks,
      failed: check.checks.filter((keyCheck) => !keyCheck.held),
      load: route.load ?? [],
      skills: route.skills ?? [],
    };
    if (check.matched) {
      appendUnique(load, seenLoad, route.load);
      appendUnique(skills, seenSkills, route.skills);
      matched.push(explanation);
    } else {
      unmatched.push(explanation);
    }
  });
  return { load, skills, source: table.source, matched, unmatched, warnings: table.warnings };
}
