import { loadYaml, parseYaml } from "@gstack/contracts";
import type { LocatedRoute, RoutingTable } from "./routing-table";

/**
 * Parses the text of `routing.yaml` into a routing table. Throws a `ContractError` naming
 * the file, the field, the rule and the line and column for syntax and schema errors.
 * Each route keeps the line it starts on, for explanations. Pure.
 */
export function parseRoutingYaml(text: string, path = "routing.yaml"): RoutingTable {
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
