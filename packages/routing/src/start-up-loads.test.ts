import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "tsup";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";

const routeTaskModule = fileURLToPath(new URL("./route-task.ts", import.meta.url));

/**
 * Resolves a task in a fresh Node against the routing.yaml under `root` and says which of the libraries
 * that cost start-up time were loaded.
 */
function librariesLoadedFor(task: object, root: string): { loaded: string[]; output: string } {
  const script = `
    import { writeFileSync } from "node:fs";
    const { routeTask } = await import(${JSON.stringify(routeTaskModule)});
    let output;
    try {
      output = JSON.stringify((await routeTask(${JSON.stringify(task)}, { root: ${JSON.stringify(root)} })).skills);
    } catch (error) {
      output = error.message;
    }
    const modules = Object.keys(process.getBuiltinModule("node:module").createRequire(import.meta.url).cache);
    const loaded = ["yaml", "zod", "picomatch"].filter((name) =>
      modules.some((path) => path.includes(\`/node_modules/\${name}/\`)),
    );
    console.log(JSON.stringify({ loaded, output }));
  `;
  const result = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(result.stderr);
  return JSON.parse(result.stdout.trim().split("\n").pop()!);
}

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "routing-loads-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("what resolving loads", () => {
  it("a plain, valid table with literal patterns needs neither yaml, zod nor picomatch", async () => {
    await writeFile(
      join(root, "routing.yaml"),
      'routes:\n  - match: { task_type: "security" }\n    skills: ["gstack-cso"]\n',
    );
    expect(librariesLoadedFor({ task_type: "Security" }, root)).toEqual({
      loaded: [],
      output: '["gstack-cso"]',
    });
  });

  it("a glob that is checked loads picomatch", async () => {
    await writeFile(
      join(root, "routing.yaml"),
      'routes:\n  - match: { task_type: "sec*" }\n    skills: [cso]\n',
    );
    expect(librariesLoadedFor({ task_type: "security" }, root)).toEqual({
      loaded: ["picomatch"],
      output: '["cso"]',
    });
  });

  it("an invalid table goes through yaml and zod for its positioned error", async () => {
    await writeFile(
      join(root, "routing.yaml"),
      "routes:\n  - match: { projects: baku }\n    skills: [cso]\n",
    );
    const { loaded, output } = librariesLoadedFor({ task_type: "security" }, root);
    expect(loaded).toEqual(["yaml", "zod"]);
    expect(output).toContain('has unknown key(s) "projects" (line 2, column 14) [unrecognized_keys]');
  });
});

describe("bundled", { timeout: loadBudget(120_000) }, () => {
  it("a bundle of the command (as the OpenClaw plugin ships it) carries picomatch for a glob", async () => {
    const out = join(root, "bundle");
    await build({
      entry: { cli: fileURLToPath(new URL("./cli.ts", import.meta.url)) },
      outDir: out,
      format: ["esm"],
      platform: "node",
      target: "node22",
      noExternal: [/.*/],
      splitting: true,
      silent: true,
      banner: {
        js: 'import { createRequire as __bundleCreateRequire } from "node:module";\nconst require = __bundleCreateRequire(import.meta.url);',
      },
    });
    await writeFile(
      join(root, "routing.yaml"),
      'routes:\n  - match: { task_type: "sec*" }\n    skills: [cso]\n',
    );
    // The bundle sits in a temporary folder with no node_modules above it, and without the
    // NODE_PATH package-manager shims set, nothing outside it can be loaded.
    const { NODE_PATH: _, ...env } = process.env;
    const result = spawnSync(
      process.execPath,
      [join(out, "cli.js"), "resolve", "--root", root, "--task-type", "security", "--json"],
      { encoding: "utf8", env },
    );
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout).skills).toEqual(["cso"]);
  });
});
