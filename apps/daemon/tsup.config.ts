import { defineConfig } from "tsup";
import { packageBuild } from "../../tsup.base";

// The library (`index`) leaves the @gstack packages to be imported, so a program that uses it
// shares one copy of each. The command (`cli`) has them bundled in and tree-shaken: a short
// command such as `status` then loads a few files of only what it runs, not whole packages,
// which was most of its time. Both write to dist/, which the build script empties first.
export default defineConfig([
  packageBuild({ index: "src/index.ts" }, { clean: false }),
  packageBuild(
    { cli: "src/cli.ts" },
    {
      clean: false,
      dts: false,
      noExternal: [/^@gstack\//],
      // The libraries' Node entries, which load zod and yaml on first use (from this package's
      // own dependencies), not their bundler entries, which import them up front.
      esbuildOptions(options) {
        options.conditions = ["node"];
      },
    },
  ),
]);
