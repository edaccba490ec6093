import { chmodSync, lstatSync, mkdirSync } from "node:fs";
import * as nodeModule from "node:module";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * The Node.js versions gstack supports, declared once. Every package's `engines`, `./dev` and
 * the READMEs say the same range; a test keeps them together. This module imports nothing a
 * too-old Node lacks, so a command can load it first and refuse in one line.
 */
export const SUPPORTED_NODE_RANGE = ">=24.16";

/** The oldest supported Node.js, as numbers. */
export const MINIMUM_NODE = { major: 24, minor: 16 } as const;

/** Whether `version` (as in `process.versions.node`, e.g. `24.16.0`) is supported. */
export function isSupportedNode(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number);
  return major > MINIMUM_NODE.major || (major === MINIMUM_NODE.major && minor >= MINIMUM_NODE.minor);
}

/** The one line a command prints when the running Node is too old. */
export function unsupportedNodeLine(command: string, version: string, nodePath: string): string {
  return (
    `${command}: needs Node.js ${SUPPORTED_NODE_RANGE}, but this is Node.js ${version} (${nodePath}); ` +
    `install Node.js ${MINIMUM_NODE.major} from https://nodejs.org (or \`nvm install ${MINIMUM_NODE.major}\`), ` +
    "or reinstall with `./dev install --prefix DIR`, which brings its own"
  );
}

/**
 * The first thing every gstack command does: refuse a too-old Node in one line (exit 1), then
 * turn on Node's on-disk compile cache in the user's own folder (see `compileCacheFolder`;
 * NODE_DISABLE_COMPILE_CACHE=1 turns it off), which makes later start-ups quicker. The command's
 * own modules load after this returns.
 */
export function startCommand(command: string): void {
  if (!isSupportedNode(process.versions.node)) {
    process.stderr.write(`${unsupportedNodeLine(command, process.versions.node, process.execPath)}\n`);
    process.exit(1);
  }
  enablePrivateCompileCache();
  plainHelpOffTerminal();
}

/**
 * Where the commands keep Node's compile cache: `gstack/node-compile-cache` under
 * XDG_CACHE_HOME, else under ~/.cache. Node's own default is one folder in the system's temporary
 * folder shared by every user: whoever made it first owns it (the others get no cache), and code
 * cached there by someone else would be run.
 */
export function compileCacheFolder(env: NodeJS.ProcessEnv = process.env, home = homedir()): string {
  const base = env.XDG_CACHE_HOME?.startsWith("/") ? env.XDG_CACHE_HOME : join(home, ".cache");
  return join(base, "gstack", "node-compile-cache");
}

/**
 * Turns on the compile cache in `compileCacheFolder`, made 0700; a folder there that is not a
 * folder of this user's alone is not used (nor is any other: the command starts without a cache).
 * NODE_COMPILE_CACHE, when set, is the person's own choice and is left to Node.
 */
function enablePrivateCompileCache(): void {
  if (!nodeModule.enableCompileCache) return;
  if (process.env.NODE_COMPILE_CACHE) {
    nodeModule.enableCompileCache();
    return;
  }
  try {
    const folder = compileCacheFolder();
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const info = lstatSync(folder);
    if (!info.isDirectory() || info.uid !== process.getuid?.()) return;
    if ((info.mode & 0o077) !== 0) chmodSync(folder, 0o700);
    nodeModule.enableCompileCache(folder);
  } catch {
    // No cache (a read-only home, say): only start-up is slower.
  }
}

/**
 * Help goes to a terminal in colour and anywhere else (a pipe, a file) without escape codes,
 * and `NO_COLOR` set to any value means none. The help renderer reads only `NO_COLOR=1`, once
 * when it loads, so this runs before it does; it is limited to help, so the agents a command
 * starts do not inherit the setting.
 */
function plainHelpOffTerminal(): void {
  const args = process.argv.slice(2);
  const help = args.length === 0 || args.includes("--help") || args.includes("-h");
  const off = (process.env.NO_COLOR ?? "") !== "" || (!process.stdout.isTTY && !process.env.FORCE_COLOR);
  if (help && off) process.env.NO_COLOR = "1";
}
