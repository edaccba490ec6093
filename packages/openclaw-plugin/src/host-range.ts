import { judgeOpenClaw, NEWEST_TESTED_OPENCLAW, TESTED_OPENCLAW_TEXT } from "@gstack/contracts";

/** What every host-range line says first, so a log can be searched for it. */
export const HOST_RANGE_MARK = "gstack: this plugin was tested with OpenClaw";

/**
 * The one line the plugin logs when it loads into an OpenClaw it was not tested with, or
 * undefined on a tested one. `running` is `api.runtime.version`, the OpenClaw product version
 * (the one `openclaw --version` prints). The plugin keeps working either way: the line only
 * tells the person reading the gateway log which version runs, which were tested, and the fix.
 */
export function hostRangeLine(running: unknown): string | undefined {
  const { standing, version } = judgeOpenClaw(running);
  if (standing === "tested") return undefined;
  const tested = `${HOST_RANGE_MARK} ${TESTED_OPENCLAW_TEXT}`;
  if (standing === "unknown") {
    return `${tested}, and this OpenClaw does not say which version it is (api.runtime.version is ${version === undefined ? "missing" : JSON.stringify(version)}); it keeps running, and \`openclaw --version\` tells whether it is one of those`;
  }
  return `${tested}, not with OpenClaw ${version}, which runs it now; it keeps running, but OpenClaw's plugin API changes between releases: if a gstack tool or report misbehaves, run OpenClaw ${NEWEST_TESTED_OPENCLAW} (npm install -g openclaw@${NEWEST_TESTED_OPENCLAW}) or a gstack plugin tested with ${version}`;
}

/**
 * Which host-range lines this process has logged, on `globalThis`: the gateway registers the
 * plugin more than once as it starts (and a reload loads this module afresh), and the line is
 * said once per process.
 */
const loggedKey = Symbol.for("gstack.openclaw-plugin.host-range-logged");

/** Logs the host-range line through `warn` the first time this process meets it; says whether it did. */
export function logHostRangeOnce(running: unknown, warn: (line: string) => void): boolean {
  const line = hostRangeLine(running);
  if (line === undefined) return false;
  const holder = globalThis as { [loggedKey]?: Set<string> };
  holder[loggedKey] ??= new Set();
  if (holder[loggedKey].has(line)) return false;
  holder[loggedKey].add(line);
  warn(line);
  return true;
}

/**
 * The running OpenClaw's version as a plugin reads it (`api.runtime.version`), or `undefined`
 * in a registration that has no runtime: OpenClaw's CLI registers plugins for their command
 * metadata with a runtime that throws on every access, and no line is due then.
 */
export function runningOpenClaw(api: {
  readonly runtime: { readonly version?: unknown };
}): { version: unknown } | undefined {
  try {
    return { version: api.runtime.version };
  } catch {
    return undefined;
  }
}
