import { checkValue, loadYaml, parseYaml } from "@gstack/contracts";
import { readSimpleYaml } from "./read-simple-yaml";
import type { LocatedRoute, RoutingTable } from "./routing-table";

/**
 * Parses the text of `routing.yaml` into a routing table. Throws a `ContractError` naming
 * the file, the field, the rule and the line and column for syntax and schema errors.
 * Each route keeps the line it starts on, for explanations. Pure.
 *
 * A table in plain YAML that passes validation is read without the `yaml` library (see
 * `readSimpleYaml`); anything else, and every invalid table, goes through `yaml`, so errors
 * keep their line and column.
 */
export function parseRoutingYaml(text: string, path = "routing.yaml"): RoutingTable {
  return parseSimpleRoutingYaml(text, path) ?? parseRoutingYamlDocument(text, path);
}

/** The table when the text is plain YAML and valid; otherwise undefined. */
export function parseSimpleRoutingYaml(text: string, path = "routing.yaml"): RoutingTable | undefined {
  const simple = readSimpleYaml(text);
  if (simple === undefined) return undefined;
  const checked = checkValue("routing", simple.value ?? {}, { source: path });
  if (!checked.ok) return undefined;
  const found = (simple.value as { routes: unknown[] }).routes;
  const routes: LocatedRoute[] = checked.value.routes.map((route, index) => {
    const item = found[index];
    const line = typeof item === "object" && item !== null ? simple.lines.get(item) : undefined;
    return line === undefined ? route : { ...route, line };
  });
  return { source: { kind: "routing.yaml", path }, routes, warnings: [] };
}

/** The table through the `yaml` library, with its positioned errors. */
export function parseRoutingYamlDocument(text: string, path = "routing.yaml"): RoutingTable {
  const config = parseYaml("routing", text, { source: path });
  const yaml = loadYaml();
  const lineCounter = new yaml.LineCounter();
  const document = yaml.parseDocument(text, { lineCounter });
  const routes: LocatedRoute[] = config.routes.map((route, index) => {
    const node = document.getIn(["routes", index], true) as { range?: [number, number] } | undefined;
    const offset = node?.range?.[0];
    return offset === undefined ? route : { ...route, line: lineCounter.linePos(offset).line };
  });
  return { source: { kind: "routing.yaml", path }, routes, warnings: [] };
}
