import type { Options } from "tsup";

/**
 * The one build configuration every package shares: ESM only, type declarations,
 * Node 24 (the oldest supported line) as the target. A package passes its entry points, and CLIs get a shebang.
 */
export function packageBuild(entry: Record<string, string>, overrides: Partial<Options> = {}): Options {
  return {
    entry,
    format: ["esm"],
    target: "node24",
    platform: "node",
    dts: true,
    sourcemap: true,
    clean: true,
    splitting: true,
    treeshake: true,
    ...overrides,
  };
}
