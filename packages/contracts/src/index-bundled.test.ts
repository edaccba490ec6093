import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "tsup";
import { describe, expect, it } from "vitest";

const source = dirname(fileURLToPath(import.meta.url));

describe("the entry bundlers pick", () => {
  it("works bundled into one file with no node_modules beside it", { timeout: 60_000 }, async () => {
    const folder = mkdtempSync(join(tmpdir(), "contracts-bundle-"));
    try {
      writeFileSync(
        join(folder, "probe.ts"),
        `import { parseJson, parseYaml } from ${JSON.stringify(join(source, "index-bundled.ts"))};
const report = [];
try { parseYaml("routing", "routes:\\n  - match: { tsk_type: security }\\n    skills: [x]\\n", { source: "routing.yaml" }); }
catch (error) { report.push(error.message); }
try { parseJson("dispatch", "{}", { source: "d.json" }); } catch (error) { report.push(error.message.split("\\n")[1]); }
console.log(JSON.stringify(report));
`,
      );
      await build({
        config: false,
        entry: { probe: join(folder, "probe.ts") },
        outDir: join(folder, "out"),
        format: ["esm"],
        platform: "node",
        target: "node22",
        noExternal: [/.*/],
        splitting: false,
        dts: false,
        silent: true,
        // Bundled CommonJS (yaml) calls require(), which an ES module has to make.
        banner: {
          js: 'import { createRequire as makeRequire } from "node:module"; const require = makeRequire(import.meta.url);',
        },
      });
      const run = spawnSync(process.execPath, [join(folder, "out", "probe.js")], {
        cwd: folder,
        encoding: "utf8",
      });
      expect(run.stderr).toBe("");
      expect(JSON.parse(run.stdout)).toEqual([
        'routing.yaml: invalid routing\n  - routes[0].match: has unknown key(s) "tsk_type" (line 2, column 14) [unrecognized_keys]',
        "  - id: is required but missing [invalid_type]",
      ]);
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
