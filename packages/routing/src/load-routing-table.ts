import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { gstackLayout, type LayoutEnv, resolveGstackHome } from "@gstack/contracts";
import { parseRoutingYaml } from "./parse-routing-yaml";
import { parseSkillRoutingSection } from "./parse-skill-routing-section";
import { emptyRoutingTable, type RoutingTable } from "./routing-table";

/** Where to look for routing configuration. */
export interface LoadRoutingOptions {
  /** gstack state root; defaults to `GSTACK_HOME`, `CLAUDE_PLUGIN_DATA` or `~/.gstack`. */
  root?: string;
  /** Environment used to find the root when `root` is not given. */
  env?: LayoutEnv;
  /**
   * Project folder whose CLAUDE.md or AGENTS.md holds a `## Skill routing` section; read
   * only when there is no routing.yaml.
   */
  projectDir?: string;
}

async function readIfPresent(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/**
 * Loads the routing table: `routing.yaml` under the gstack state root when it exists
 * (a broken one throws a `ContractError` with line and column, never falls back silently);
 * otherwise the `## Skill routing` section of the project's CLAUDE.md, then AGENTS.md;
 * otherwise an empty table whose source is `none`.
 */
export async function loadRoutingTable(options: LoadRoutingOptions = {}): Promise<RoutingTable> {
  const root = options.root ?? resolveGstackHome(options.env ?? process.env);
  const routingPath = gstackLayout(root).routing;
  const yamlText = await readIfPresent(routingPath);
  if (yamlText !== undefined) return parseRoutingYaml(yamlText, routingPath);
  if (options.projectDir === undefined) return emptyRoutingTable();
  for (const kind of ["CLAUDE.md", "AGENTS.md"] as const) {
    const path = join(options.projectDir, kind);
    const markdown = await readIfPresent(path);
    if (markdown === undefined) continue;
    const section = parseSkillRoutingSection(markdown, path);
    if (section.found) return { source: { kind, path }, routes: section.routes, warnings: section.warnings };
  }
  return emptyRoutingTable();
}
