/**
 * Prints how routing compares with simple baselines in the same process:
 * - loading: parseRoutingYaml (plain YAML read without the yaml library, schema, route lines)
 *   and the yaml path it falls back to, both against yaml.parse alone;
 * - matching: resolveRoutes (globs, merge, explanations) against a plain equality scan (no
 *   globs at all) and against calling picomatch.isMatch for every check (no explanations);
 * - start-up: the built CLI's `--help` and `resolve` (a plain table; one with a glob; one the
 *   plain reader leaves to yaml) against `node -e 0` (run `pnpm build` first).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import picomatch from "picomatch";
import { parse } from "yaml";
import { benchStartUp } from "../../../scripts/bench-start-up";
import { parseRoutingYaml, parseRoutingYamlDocument } from "../src/parse-routing-yaml";
import { resolveRoutes } from "../src/resolve-routes";
import type { RoutingTask } from "../src/routing-task";

function time(label: string, iterations: number, body: () => void): number {
  for (let index = 0; index < Math.min(5, iterations); index++) body();
  const start = performance.now();
  for (let index = 0; index < iterations; index++) body();
  const perCall = (performance.now() - start) / iterations;
  console.log(`  ${label}: ${(perCall * 1000).toFixed(1)} µs per call`);
  return perCall;
}

const routeCount = 200;
const lines = ["routes:"];
for (let index = 0; index < routeCount; index++) {
  lines.push(
    `  - name: route-${index}`,
    `    match: { project: "project-${index % 20}", task_type: ["type-${index % 7}", "other"], files: ["src/area-${index % 13}/**", "*.md"] }`,
    `    skills: ["skill-${index % 17}", "skill-${(index + 3) % 17}"]`,
    `    load: ["context-${index % 11}"]`,
  );
}
const text = lines.join("\n");
const table = parseRoutingYaml(text);
const tasks: RoutingTask[] = Array.from({ length: 100 }, (_, index) => ({
  project: `project-${index % 20}`,
  task_type: `type-${index % 7}`,
  files: [`src/area-${index % 13}/module-${index}.ts`, "lib/other.ts"],
}));

console.log(`routing: ${routeCount} routes, ${tasks.length} tasks`);
const yamlOnly = time("yaml.parse", 20, () => parse(text));
const full = time("parseRoutingYaml", 20, () => parseRoutingYaml(text));
const throughYaml = time("parseRoutingYamlDocument", 20, () => parseRoutingYamlDocument(text));
console.log(`  load ${(full / yamlOnly).toFixed(2)}× yaml.parse alone (plain YAML, read without yaml)`);
console.log(
  `  load ${(throughYaml / yamlOnly).toFixed(1)}× yaml.parse alone (through yaml, as other YAML is)`,
);

const routes = table.routes;
let sink = 0;
const plain = time("equality scan", 200, () => {
  for (const task of tasks) {
    for (const route of routes) {
      const match = route.match;
      if (match.project === task.project && (match.task_type as string[]).includes(task.task_type!)) sink++;
    }
  }
});
const resolved = time("resolveRoutes", 20, () => {
  for (const task of tasks) sink += resolveRoutes(table, task).skills.length;
});
console.log(
  `  resolve ${(resolved / plain).toFixed(1)}× a plain equality scan (globs and explanations included)`,
);
const naive = time("picomatch.isMatch scan", 20, () => {
  for (const task of tasks) {
    for (const route of routes) {
      const match = route.match;
      if (
        picomatch.isMatch(task.project!, match.project as string) &&
        picomatch.isMatch(task.task_type!, match.task_type as string[], { nocase: true }) &&
        task.files!.some((file) => picomatch.isMatch(file, match.files!, { dot: true }))
      )
        sink++;
    }
  }
});
console.log(`  resolve ${(resolved / naive).toFixed(2)}× calling picomatch.isMatch for every check`);
if (sink < 0) console.log(sink);

const root = mkdtempSync(join(tmpdir(), "routing-bench-"));
try {
  const tables = {
    plain: 'routes:\n  - name: security\n    match: { task_type: "security" }\n    skills: ["gstack-cso"]\n',
    glob: 'routes:\n  - name: security\n    match: { task_type: "sec*" }\n    skills: ["gstack-cso"]\n',
    // An anchor: the plain reader gives up and yaml reads the table.
    anchored:
      'routes:\n  - name: security\n    match: &security { task_type: "security" }\n    skills: ["gstack-cso"]\n',
  };
  for (const [name, table] of Object.entries(tables)) {
    mkdirSync(join(root, name));
    writeFileSync(join(root, name, "routing.yaml"), table);
  }
  const resolveIn = (name: string) => ["resolve", "--root", join(root, name), "--task-type", "security"];
  benchStartUp(join(import.meta.dirname, "..", "dist", "cli.js"), [
    { label: "gstack-routing --help", args: ["--help"] },
    { label: "gstack-routing resolve --help", args: ["resolve", "--help"] },
    { label: "gstack-routing resolve", args: resolveIn("plain") },
    { label: "resolve, a glob checked (picomatch)", args: resolveIn("glob") },
    { label: "resolve, an anchor in the table (yaml)", args: resolveIn("anchored") },
  ]);
} finally {
  rmSync(root, { recursive: true, force: true });
}
