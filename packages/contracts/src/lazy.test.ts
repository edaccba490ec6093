import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import * as contracts from "./index";
import { builtSchema, lazySchema } from "./lazy";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");

/** Runs `body` in a fresh Node process (TypeScript through tsx) that records every module it loads. */
function inFreshProcess(body: string): unknown {
  const script = `
import { createRequire, registerHooks } from "node:module";
const loaded = [];
registerHooks({
  resolve(specifier, context, next) { if (specifier.startsWith("node:")) loaded.push(specifier); return next(specifier, context); },
  load(url, context, next) { loaded.push(url); return next(url, context); },
});
const required = createRequire(import.meta.url).cache;
// Modules seen by the loader or in the require cache, and zod's mark on the global object.
const dependencies = () => {
  const paths = [...loaded, ...Object.keys(required)].join("\\n");
  const found = [];
  if (globalThis.__zod_globalRegistry || /\\/node_modules\\/zod\\//.test(paths)) found.push("zod");
  if (/\\/node_modules\\/yaml\\//.test(paths)) found.push("yaml");
  if (loaded.includes("node:crypto")) found.push("node:crypto");
  return found.sort();
};
const contracts = await import(${JSON.stringify(pathToFileURL(join(packageDir, "src", "index.ts")).href)});
${body}
`;
  const result = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: packageDir,
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(result.stderr);
  return JSON.parse(result.stdout);
}

const exportedSchemas = Object.entries(contracts).filter(
  ([name, value]) => name.endsWith("Schema") && typeof value === "object",
) as [string, z.ZodType][];

describe("loading on first use", () => {
  it("imports without evaluating zod, yaml or node:crypto, and loads each when first needed", () => {
    const steps = inFreshProcess(`
const steps = { imported: dependencies() };
contracts.gstackLayout("/tmp/state").activity.week(contracts.isoWeekOf(new Date(0)));
steps.pathsAsked = dependencies();
steps.described = contracts.dispatchSchema.description;
steps.schemaRead = dependencies();
contracts.parseYaml("routing", "routes: []\\n");
steps.yamlParsed = dependencies();
console.log(JSON.stringify(steps));
`);
    expect(steps).toEqual({
      imported: [],
      pathsAsked: [],
      described: "A coding task dispatched from OpenClaw to the gstack dispatch daemon.",
      schemaRead: ["zod"],
      yamlParsed: ["yaml", "zod"],
    });
  });

  it("takes zod and yaml from loaders a bundle provides, each called once and only when needed", () => {
    const steps = inFreshProcess(`
const calls = [];
const requireHere = createRequire(import.meta.url);
contracts.provideDependencyLoaders({
  zod: () => (calls.push("zod"), requireHere("zod")),
  yaml: () => (calls.push("yaml"), requireHere("yaml")),
});
const steps = {};
contracts.parseJson("dispatch", JSON.stringify({ id: "dispatch-a", dispatched_by: "x", task: "t", project: "p", project_dir: "/p" }));
steps.validParsed = [...calls];
try { contracts.parseJson("dispatch", "{}", { source: "d.json" }); } catch (error) { steps.error = error.message.split("\\n")[0]; }
steps.invalidParsed = [...calls];
contracts.parseYaml("routing", "routes: []\\n");
contracts.parseYaml("routing", "routes: []\\n");
steps.yamlParsed = [...calls];
console.log(JSON.stringify(steps));
`);
    expect(steps).toMatchObject({ validParsed: [], invalidParsed: ["zod"], yamlParsed: ["zod", "yaml"] });
    expect((steps as { error: string }).error).toContain("d.json");
  });

  it("shares the zod a program imports itself rather than loading a second copy", () => {
    expect(Object.getPrototypeOf(contracts.learningTypeSchema)).toBe(z.ZodEnum.prototype);
    expect(contracts.learningSchema.safeParse({}).error).toBeInstanceOf(z.ZodError);
  });
});

describe("a schema built on first use", () => {
  it("builds once, on the first property read", () => {
    let builds = 0;
    const schema = lazySchema((zod) => {
      builds++;
      return zod.string().min(2);
    });
    expect(builds).toBe(0);
    expect(schema.safeParse("ab").success).toBe(true);
    expect(schema.safeParse("a").success).toBe(false);
    expect(builds).toBe(1);
  });

  it.each(exportedSchemas)("%s behaves as the schema it stands for", (_name, schema) => {
    const built = builtSchema(schema);
    expect(built).not.toBe(schema);
    expect(schema).toBeInstanceOf(z.ZodType);
    expect(Object.getPrototypeOf(schema)).toBe(Object.getPrototypeOf(built));
    expect(schema.description).toBe(built.description);
    expect(z.globalRegistry.get(schema)).toEqual(z.globalRegistry.get(built));
    expect(z.toJSONSchema(schema, { io: "input" })).toEqual(z.toJSONSchema(built, { io: "input" }));
    // Inside a program's own schema it is the same field as the schema itself.
    const wrapped = z.toJSONSchema(z.object({ field: schema }), { io: "input" });
    expect(wrapped).toEqual(z.toJSONSchema(z.object({ field: built }), { io: "input" }));
    for (const sample of [undefined, null, "x", 3, [], {}]) {
      expect(schema.safeParse(sample)).toEqual(built.safeParse(sample));
    }
  });

  it("prints as the schema it stands for", () => {
    const schema = contracts.targetAgentSchema;
    expect(inspect(schema, { depth: 4 })).toBe(inspect(builtSchema(schema), { depth: 4 }));
    expect(inspect(schema)).toContain("ZodString");
  });

  it("lists the schema's own keys and descriptors", () => {
    const schema = contracts.dispatchSchema;
    const built = builtSchema(schema);
    expect(Reflect.ownKeys(schema)).toEqual(Reflect.ownKeys(built));
    expect(Object.getOwnPropertyDescriptor(schema, "_zod")).toEqual(
      Object.getOwnPropertyDescriptor(built, "_zod"),
    );
    expect("safeParse" in schema).toBe(true);
  });
});
