import { isAbsolute, relative } from "node:path";
import { type LoadRoutingOptions, loadRoutingTable } from "./load-routing-table";
import { type RoutingResult, resolveRoutes } from "./resolve-routes";
import type { RoutingTask } from "./routing-task";

/**
 * Makes absolute touched paths inside `projectDir` relative to it, since route globs are
 * written relative to the project folder. Other paths are left as they are.
 */
export function relativeToProject(files: readonly string[], projectDir: string | undefined): string[] {
  if (projectDir === undefined) return [...files];
  return files.map((file) => {
    if (!isAbsolute(file)) return file;
    const inside = relative(projectDir, file);
    return inside.length > 0 && !inside.startsWith("..") && !isAbsolute(inside) ? inside : file;
  });
}

/**
 * The one call: loads the routing table (routing.yaml, else the project's `## Skill
 * routing` section) and resolves the task against it. With `projectDir`, absolute touched
 * paths inside it are matched relative to it.
 *
 * @example
 * const { load, skills } = await routeTask({ project: "acme-baku", files: ["calendar/api.ts"] });
 */
export async function routeTask(task: RoutingTask, options: LoadRoutingOptions = {}): Promise<RoutingResult> {
  const table = await loadRoutingTable(options);
  const files = task.files === undefined ? undefined : relativeToProject(task.files, options.projectDir);
  return resolveRoutes(table, files === undefined ? task : { ...task, files });
}
