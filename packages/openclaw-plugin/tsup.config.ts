import { defineConfig } from "tsup";
import { packageBuild } from "../../tsup.base";

// OpenClaw installs a plugin's dependencies from npm, where the @gstack libraries are not
// published yet: everything the plugin runs is bundled into dist, and only the host
// (`openclaw`, resolved through the peer link OpenClaw makes) stays outside.
export default defineConfig(
  packageBuild(
    { index: "src/index.ts" },
    {
      noExternal: [/.*/],
      external: [/^openclaw(\/|$)/],
      splitting: false,
      // Bundled CommonJS dependencies call require(); ESM has none unless we make one.
      banner: {
        js: 'import { createRequire as __gstackCreateRequire } from "node:module";\nconst require = __gstackCreateRequire(import.meta.url);',
      },
    },
  ),
);
