import { join } from "node:path";
import { type GstackLayout, gstackLayout, resolveGstackHome } from "@gstack/contracts";

/** The plugin's configuration (`plugins.entries.gstack.config` in `openclaw.json`). */
export interface PluginSettings {
  /** The gstack state root the daemon watches. */
  gstackHome: string;
  layout: GstackLayout;
  /** Folder of the plugin's own records (dispatches sent, completions delivered). */
  stateDir: string;
  /** Who the dispatch files name as `dispatched_by`. */
  dispatchedBy: string;
  /** The file holding the completion callback secret (mode 0600). */
  callbackSecretFile: string;
  /** The path of the signed completion route on the gateway. */
  callbackPath: string;
  /** Follow `dispatch/completed/` on this host and deliver completions from it. */
  followCompletions: boolean;
}

/** The route the daemon's signed completion callbacks are POSTed to. */
export const DEFAULT_CALLBACK_PATH = "/gstack/completion";

/**
 * Reads the plugin configuration, filling defaults from the environment: the gstack root
 * is `gstackHome`, else `GSTACK_HOME`, else `~/.gstack`; the plugin's records live under
 * OpenClaw's state folder.
 */
export function resolvePluginSettings(
  config: Record<string, unknown> | undefined,
  openclawStateDir: string,
  env: NodeJS.ProcessEnv = process.env,
): PluginSettings {
  const text = (key: string): string | undefined => {
    const value = config?.[key];
    return typeof value === "string" && value.length > 0 ? value : undefined;
  };
  const gstackHome = text("gstackHome") ?? resolveGstackHome(env);
  const layout = gstackLayout(gstackHome);
  return {
    gstackHome,
    layout,
    stateDir: text("stateDir") ?? join(openclawStateDir, "gstack"),
    dispatchedBy: text("dispatchedBy") ?? "openclaw",
    callbackSecretFile: text("callbackSecretFile") ?? layout.callbackSecret,
    callbackPath: text("callbackPath") ?? DEFAULT_CALLBACK_PATH,
    followCompletions: config?.followCompletions !== false,
  };
}
