import type { Options } from "tsup";

/**
 * The one build configuration every package shares: ESM only, Node 24 (the oldest supported
 * line) as the target. A package passes its entry points, and CLIs get a shebang. Type
 * declarations are not written here: scripts/types.ts writes every package's from one
 * TypeScript program over the whole workspace (`pnpm run build` runs it after this).
 */
export function packageBuild(entry: Record<string, string>, overrides: Partial<Options> = {}): Options {
  return {
    entry,
    format: ["esm"],
    target: "node24",
    platform: "node",
    dts: false,
    sourcemap: true,
    // Everything in dist/ but the type declarations, which scripts/types.ts writes and may be
    // writing while a package builds (`./dev test` runs both at once).
    clean: ["!**/*.d.ts"],
    splitting: true,
    treeshake: true,
    ...overrides,
  };
}
