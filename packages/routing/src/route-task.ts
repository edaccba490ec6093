import { type LoadRoutingOptions, loadRoutingTable } from "./load-routing-table";
import { type RoutingResult, resolveRoutes } from "./resolve-routes";
import type { RoutingTask } from "./routing-task";

/**
 * The one call: loads the routing table (routing.yaml, else the project's `## Skill
 * routing` section) and resolves the task against it.
 *
 * @example
 * const { load, skills } = await routeTask({ project: "acme-baku", files: ["calendar/api.ts"] });
 */
export async function routeTask(task: RoutingTask, options: LoadRoutingOptions = {}): Promise<RoutingResult> {
  return resolveRoutes(await loadRoutingTable(options), task);
}
