import { cp, rm } from "node:fs/promises";
import { defineConfig } from "tsup";
import { packageBuild } from "../../tsup.base";

// OpenClaw installs a plugin's dependencies from npm, where the @gstack libraries are not
// published yet: everything the plugin runs is bundled into dist, and only the host
// (`openclaw`, resolved through the peer link OpenClaw makes) stays outside. The same
// tarball carries the gstack commands (the five the bridge skill needs, the skill generator and
// the bridge skill's installer), bundled the same way, so one package installs everything.
const commands = Object.fromEntries(
  [
    "gstack-dispatch",
    "gstack-handoff",
    "gstack-activity",
    "gstack-learnings",
    "gstack-routing",
    "gstack-openclaw-gen",
    "gstack-bridge-skill",
    "gstack-brief",
  ].map((name) => [`bin/${name}`, `src/bin/${name}.ts`]),
);

export default defineConfig(
  packageBuild(
    {
      index: "src/index.ts",
      ...commands,
      "vendor/zod": "src/vendor/zod.ts",
      "vendor/yaml": "src/vendor/yaml.ts",
    },
    {
      noExternal: [/.*/],
      external: [/^openclaw(\/|$)/],
      splitting: true,
      treeshake: false,
      // The libraries say "no side effects" for their library use; their command entries
      // run on import, so the package-level hint must not drop them here. Libraries resolve
      // through their Node entries (`import`), not the bundler entry (`module`) that imports
      // zod and yaml up front: bundle-dependencies.ts hands them over on first use.
      esbuildOptions(options) {
        options.ignoreAnnotations = true;
        options.conditions = ["node"];
      },
      // The published JSON Schemas travel with the commands, for anyone writing a dispatch by hand.
      // The bridge skill's files sit beside dist/, where its bundled installer looks for them
      // (`../skill/gstack-bridge` from a chunk); the folder is a build output, not committed.
      onSuccess: async () => {
        await cp("../../schemas", "dist/schemas", { recursive: true });
        await rm("skill", { recursive: true, force: true });
        await cp("../../apps/bridge-skill/skill", "skill", { recursive: true });
      },
      // Bundled CommonJS dependencies call require(); ESM has none unless we make one.
      banner: {
        js: 'import { createRequire as __gstackCreateRequire } from "node:module";\nconst require = __gstackCreateRequire(import.meta.url);',
      },
    },
  ),
);
