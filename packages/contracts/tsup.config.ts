import { defineConfig } from "tsup";
import { packageBuild } from "../../tsup.base";

// `index` is what Node loads; `index.bundled` is what bundlers pick (see src/index-bundled.ts).
export default defineConfig(packageBuild({ index: "src/index.ts", "index.bundled": "src/index-bundled.ts" }));
