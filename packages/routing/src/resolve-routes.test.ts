import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatRoutingResult } from "./format-routing-result";
import { resolveRoutes } from "./resolve-routes";
import type { LocatedRoute, RoutingTable } from "./routing-table";

function table(routes: LocatedRoute[]): RoutingTable {
  return { source: { kind: "inline" }, routes, warnings: [] };
}

const designRoutes: LocatedRoute[] = [
  {
    match: { project: "baku", files: ["calendar/*"] },
    load: ["kitsune-context", "calendar-api-docs"],
    line: 2,
  },
  { name: "security", match: { task_type: "security" }, skills: ["gstack-cso", "gstack-careful"] },
  {
    match: { task_type: ["security", "shipping"] },
    skills: ["gstack-careful", "gstack-ship"],
    load: ["kitsune-context"],
  },
];

describe("resolveRoutes", () => {
  it("merges load and skills of matching routes in file order without duplicates", () => {
    const result = resolveRoutes(table(designRoutes), {
      project: "baku",
      task_type: "security",
      files: ["calendar/events.ts"],
    });
    expect(result.load).toEqual(["kitsune-context", "calendar-api-docs"]);
    expect(result.skills).toEqual(["gstack-cso", "gstack-careful", "gstack-ship"]);
    expect(result.matched.map((route) => route.name)).toEqual(["routes[0]", "security", "routes[2]"]);
    expect(result.unmatched).toEqual([]);
    expect(result.source).toEqual({ kind: "inline" });
  });

  it("explains which key failed for each route that did not match", () => {
    const result = resolveRoutes(table(designRoutes), { project: "widget", task_type: "shipping" });
    expect(result.skills).toEqual(["gstack-careful", "gstack-ship"]);
    expect(result.unmatched.map((route) => [route.name, route.failed.map((check) => check.key)])).toEqual([
      ["routes[0]", ["project", "files"]],
      ["security", ["task_type"]],
    ]);
    const text = formatRoutingResult(result);
    expect(text).toContain("skills: gstack-careful, gstack-ship");
    expect(text).toContain('- routes[0] (line 2): project: project "widget" matches none of "baku"');
    expect(text).toContain("files: the task names no files");
    expect(text).toContain('+ routes[2]: task type "shipping" matches "shipping"');
  });

  it("gives an empty result for an empty table", () => {
    const result = resolveRoutes({ source: { kind: "none" }, routes: [], warnings: [] }, { project: "x" });
    expect(result).toMatchObject({ load: [], skills: [], matched: [], unmatched: [] });
    expect(formatRoutingResult(result)).toContain("no routing configuration found");
  });

  const name = fc.constantFrom("a", "b", "c", "d", "e", "f");
  const route = fc.record({
    match: fc.record({ task_type: fc.constantFrom("x", "y", "*") }, { requiredKeys: [] }),
    load: fc.array(name, { maxLength: 4 }),
    skills: fc.array(name, { maxLength: 4 }),
  });

  it("merge invariants: no duplicates, nothing lost, first-occurrence order", () => {
    fc.assert(
      fc.property(fc.array(route, { maxLength: 8 }), fc.constantFrom("x", "y", "z"), (routes, taskType) => {
        const result = resolveRoutes(table(routes), { task_type: taskType });
        const matchedRoutes = result.matched.map((explanation) => routes[explanation.index]!);
        for (const field of ["load", "skills"] as const) {
          const merged = result[field];
          const all: string[] = matchedRoutes.flatMap((matchedRoute) => matchedRoute[field] ?? []);
          expect(new Set(merged).size).toBe(merged.length);
          expect(new Set(merged)).toEqual(new Set(all));
          const firstSeen = merged.map((entry) => all.indexOf(entry));
          expect(firstSeen).toEqual([...firstSeen].sort((left, right) => left - right));
        }
        expect(result.matched.length + result.unmatched.length).toBe(routes.length);
        expect(
          [...result.matched, ...result.unmatched].map((explanation) => explanation.index).sort(),
        ).toEqual(routes.map((_, index) => index).sort());
      }),
    );
  });

  it("appending a route never removes or reorders what earlier routes gave", () => {
    fc.assert(
      fc.property(
        fc.array(route, { maxLength: 6 }),
        route,
        fc.constantFrom("x", "y"),
        (routes, extra, taskType) => {
          const before = resolveRoutes(table(routes), { task_type: taskType });
          const after = resolveRoutes(table([...routes, extra]), { task_type: taskType });
          expect(after.skills.slice(0, before.skills.length)).toEqual(before.skills);
          expect(after.load.slice(0, before.load.length)).toEqual(before.load);
        },
      ),
    );
  });
});
