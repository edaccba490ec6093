import manifest from "../package.json" with { type: "json" };

/** This daemon's version, from its package manifest (inlined when bundled). */
export const DAEMON_VERSION: string = manifest.version;
