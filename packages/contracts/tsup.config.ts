import { defineConfig } from "tsup";
import { packageBuild } from "../../tsup.base";

// `index` is what Node loads; `index.bundled` is what bundlers pick (see src/index-bundled.ts).
// `node-support` is what a command loads first, before anything a too-old Node could not link.
export default defineConfig(
  packageBuild({
    index: "src/index.ts",
    "index.bundled": "src/index-bundled.ts",
    "node-support": "src/node-support.ts",
  }),
);
