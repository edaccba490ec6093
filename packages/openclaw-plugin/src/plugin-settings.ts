import { join } from "node:path";
import { type GstackLayout, gstackLayout, resolveGstackHome } from "@gstack/contracts";
import { DEFAULT_REVIEW_TTL_HOURS } from "./review/capability";

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
  /** The review page on the gateway's port, which every plan, gate and report message links to. */
  review: ReviewSettings;
}

export interface ReviewSettings {
  enabled: boolean;
  /** Where the person reaches the gateway (e.g. its Tailscale name), when not the gateway's own address. */
  publicBaseUrl?: string;
  /** The key that signs review links (mode 0600, made on first use). */
  keyFile: string;
  /** How long a link opens its page. */
  ttlHours: number;
}

/** The route prefix of the review pages on the gateway. */
export const REVIEW_PATH = "/gstack/review";

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
    review: reviewSettings(config?.review, text("stateDir") ?? join(openclawStateDir, "gstack")),
  };
}

function reviewSettings(value: unknown, stateDir: string): ReviewSettings {
  const config = typeof value === "object" && value !== null ? (value as Record<string, unknown>) : {};
  const base =
    typeof config.publicBaseUrl === "string" ? config.publicBaseUrl.trim().replace(/\/+$/, "") : "";
  const hours =
    typeof config.ttlHours === "number" && config.ttlHours > 0 ? config.ttlHours : DEFAULT_REVIEW_TTL_HOURS;
  return {
    enabled: config.enabled !== false,
    ...(base ? { publicBaseUrl: base } : {}),
    keyFile:
      typeof config.keyFile === "string" && config.keyFile ? config.keyFile : join(stateDir, "review.key"),
    ttlHours: hours,
  };
}
