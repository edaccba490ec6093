/**
 * How the bundled plugin and commands reach zod and yaml: the tarball has no node_modules, so
 * contracts cannot load them on first use as it does under Node. Both are built into files of
 * their own (`dist/vendor/`, exported as `@gstack/openclaw-plugin/vendor/*`) and required by
 * that name, which a package may use for itself, only when first asked for. A command that
 * validates nothing never reads zod, and one that reads no YAML never reads yaml; the plugin's
 * own imports of zod share the same module. Each entry imports this module first.
 */
import { createRequire } from "node:module";
import { provideDependencyLoaders } from "@gstack/contracts";
import type * as Yaml from "yaml";
import type * as Zod from "zod";

const requireHere = createRequire(import.meta.url);
const vendored = <T>(name: string) =>
  (requireHere(`@gstack/openclaw-plugin/vendor/${name}`) as { default: T }).default;

provideDependencyLoaders({
  zod: () => vendored<typeof Zod>("zod"),
  yaml: () => vendored<typeof Yaml>("yaml"),
});
