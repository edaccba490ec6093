import type { Route } from "@gstack/contracts";
import type { RoutingSource, RoutingWarning } from "./routing-source";

/** A route with the line it starts on in its source, when known. */
export type LocatedRoute = Route & { line?: number };

/** Routes in file order, where they came from, and anything skipped while reading them. */
export interface RoutingTable {
  source: RoutingSource;
  routes: readonly LocatedRoute[];
  warnings: readonly RoutingWarning[];
}

/** A table without routes; what a machine without routing configuration gets. */
export function emptyRoutingTable(): RoutingTable {
  return { source: { kind: "none" }, routes: [], warnings: [] };
}
