import { realpathSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The script that started this command, which a service starts again: the real path of the
 * installed bin (this package's `dist/cli.js`, or the OpenClaw plugin's bundled
 * `gstack-dispatch.js`), or the built `dist/cli.js` when this runs from source.
 */
export function installedCliPath(): string {
  const entry = process.argv[1];
  if (entry && !entry.endsWith(".ts")) {
    try {
      return realpathSync(entry);
    } catch {}
  }
  return join(dirname(fileURLToPath(import.meta.url)), "..", "..", "dist", "cli.js");
}

/** Where `./dev install --prefix DIR` put the commands this one came with. */
export interface InstalledPrefix {
  prefix: string;
  /** `DIR/lib/node_modules/@gstack/openclaw-plugin`. */
  packageDir: string;
  /** `DIR/lib/gstack`: the Node.js runtime copied there, when the machine's was too old. */
  runtimeDir: string;
  /** `DIR/share/gstack`: the plugin tarball for `openclaw plugins install`. */
  shareDir: string;
}

const PACKAGE_PATH = ["lib", "node_modules", "@gstack", "openclaw-plugin"].join(sep);

/** The prefix this command is installed under, or undefined when it runs from a checkout. */
export function installedPrefix(cli: string = installedCliPath()): InstalledPrefix | undefined {
  const at = cli.lastIndexOf(`${sep}${PACKAGE_PATH}${sep}`);
  if (at < 0) return undefined;
  const prefix = cli.slice(0, at) || sep;
  return {
    prefix,
    packageDir: join(prefix, PACKAGE_PATH),
    runtimeDir: join(prefix, "lib", "gstack"),
    shareDir: join(prefix, "share", "gstack"),
  };
}
