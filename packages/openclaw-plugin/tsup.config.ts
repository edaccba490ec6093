import { cp } from "node:fs/promises";
import { defineConfig } from "tsup";
import { packageBuild } from "../../tsup.base";

// OpenClaw installs a plugin's dependencies from npm, where the @gstack libraries are not
// published yet: everything the plugin runs is bundled into dist, and only the host
// (`openclaw`, resolved through the peer link OpenClaw makes) stays outside. The same
// tarball carries the five gstack commands the bridge skill needs, bundled the same way,
// so one package installs everything from a checkout.
const commands = Object.fromEntries(
  ["gstack-dispatch", "gstack-handoff", "gstack-activity", "gstack-learnings", "gstack-routing"].map(
    (name) => [`bin/${name}`, `src/bin/${name}.ts`],
  ),
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
      dts: { entry: { index: "src/index.ts" } },
      // The published JSON Schemas travel with the commands, for anyone writing a dispatch by hand.
      onSuccess: async () => {
        await cp("../../schemas", "dist/schemas", { recursive: true });
      },
      // Bundled CommonJS dependencies call require(); ESM has none unless we make one.
      banner: {
        js: 'import { createRequire as __gstackCreateRequire } from "node:module";\nconst require = __gstackCreateRequire(import.meta.url);',
      },
    },
  ),
);
