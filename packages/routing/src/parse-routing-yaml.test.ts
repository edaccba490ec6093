import { ContractError } from "@gstack/contracts";
import { describe, expect, it } from "vitest";
import { parseRoutingYaml } from "./parse-routing-yaml";

describe("parseRoutingYaml", () => {
  it("reads the design's routing table with the line of each route", () => {
    const text = [
      "# shared routing",
      "routes:",
      '  - match: { project: "baku", files: ["calendar/*"] }',
      '    load: ["kitsune-context", "calendar-api-docs"]',
      '  - match: { task_type: "security" }',
      '    skills: ["gstack-cso", "gstack-careful"]',
    ].join("\n");
    const table = parseRoutingYaml(text, "/state/routing.yaml");
    expect(table.source).toEqual({ kind: "routing.yaml", path: "/state/routing.yaml" });
    expect(table.routes.map((route) => route.line)).toEqual([3, 5]);
    expect(table.routes[1]).toMatchObject({
      match: { task_type: "security" },
      skills: ["gstack-cso", "gstack-careful"],
    });
  });

  it("gives line, column and rule for a syntax error", () => {
    const attempt = () => parseRoutingYaml('routes:\n  - match: { project: "baku"\n', "routing.yaml");
    expect(attempt).toThrow(
      /routing\.yaml: invalid routing\n {2}- \(document\): line \d+, column \d+: .* \[yaml\]/,
    );
  });

  it("gives field, rule and position for a schema error", () => {
    let error: unknown;
    try {
      parseRoutingYaml(
        "routes:\n  - match:\n      projects: baku\n    skills: [review]\n  - match: {}\n",
        "routing.yaml",
      );
    } catch (caught) {
      error = caught;
    }
    expect(ContractError.isInstance(error)).toBe(true);
    const issues = (error as ContractError).issues;
    expect(issues).toContainEqual({
      path: "routes[0].match",
      rule: "unrecognized_keys",
      message: 'has unknown key(s) "projects" (line 3, column 7)',
    });
    expect(issues.some((issue) => issue.path === "routes[1].load" && issue.rule === "custom")).toBe(true);
  });
});
