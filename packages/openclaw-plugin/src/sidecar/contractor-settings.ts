import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

/** The contractor sidecar's settings (`plugins.entries.gstack.config.contractor` in `openclaw.json`). */
export interface ContractorSettings {
  /** Whether the plugin starts the sidecar. */
  enabled: boolean;
  /** Loopback host the sidecar listens on. */
  host: string;
  port: number;
  /** The model id OpenClaw names (`<provider>/<modelId>`). */
  modelId: string;
  /** The provider id written into `models.providers`. */
  providerId: string;
  /** The file with the sidecar's key (mode 0600). */
  keyFile: string;
  /** Where the OpenClaw session → Claude Code session map is kept. */
  sessionsFile: string;
  /** Where the running sidecar records its process and port. */
  lockFile: string;
  /** Where each running turn's lock (its gateway and Claude Code processes) is kept. */
  turnLocksDir: string;
  /** The folder Claude Code works in. */
  projectDir: string | undefined;
  /** The Claude Code program. */
  claudeBinary: string;
  /** A turn is stopped (its whole process group) after this long. */
  turnTimeoutMs: number;
  /**
   * How long a session's Claude Code process is kept after a turn, for the session's next turn
   * (streaming JSON input); 0 starts a process for every turn instead.
   */
  idleTimeoutMs: number;
  /** Request bodies over this size are refused. */
  maxBodyBytes: number;
  /** Claude Code tools granted beyond the dispatch defaults. */
  allowedTools: string[];
  /** Extra environment for Claude Code (e.g. `ANTHROPIC_BASE_URL`). */
  env: Record<string, string>;
}

/** A session's Claude Code process is kept this long after its turn (a conversation's pause between messages). */
export const DEFAULT_IDLE_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_CONTRACTOR_PORT = 18_795;
export const DEFAULT_CONTRACTOR_PROVIDER = "gstack-claude";
export const DEFAULT_CONTRACTOR_MODEL = "claude-code";

function expandHome(path: string): string {
  if (path === "~") return homedir();
  if (path.startsWith("~/")) return join(homedir(), path.slice(2));
  return isAbsolute(path) ? path : resolve(path);
}

/**
 * Reads the `contractor` block of the plugin config. Records live beside the plugin's other
 * records (`<OpenClaw state>/gstack`); the sidecar is off until `enabled` is true.
 */
export function resolveContractorSettings(raw: unknown, pluginStateDir: string): ContractorSettings {
  const config = (raw && typeof raw === "object" ? raw : {}) as Record<string, unknown>;
  const text = (key: string): string | undefined => {
    const value = config[key];
    return typeof value === "string" && value.length > 0 ? value : undefined;
  };
  const number = (key: string, fallback: number): number => {
    const value = config[key];
    return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : fallback;
  };
  const strings = (key: string): string[] => {
    const value = config[key];
    return Array.isArray(value) ? value.filter((item): item is string => typeof item === "string") : [];
  };
  const env: Record<string, string> = {};
  if (config.env && typeof config.env === "object") {
    for (const [name, value] of Object.entries(config.env as Record<string, unknown>)) {
      if (typeof value === "string") env[name] = value;
    }
  }
  const projectDir = text("projectDir");
  return {
    enabled: config.enabled === true,
    host: "127.0.0.1",
    port: number("port", DEFAULT_CONTRACTOR_PORT),
    modelId: text("modelId") ?? DEFAULT_CONTRACTOR_MODEL,
    providerId: text("providerId") ?? DEFAULT_CONTRACTOR_PROVIDER,
    keyFile: expandHome(text("keyFile") ?? join(pluginStateDir, "contractor.key")),
    sessionsFile: expandHome(text("sessionsFile") ?? join(pluginStateDir, "contractor-sessions.json")),
    lockFile: join(pluginStateDir, "contractor-sidecar.lock"),
    turnLocksDir: join(pluginStateDir, "contractor-turns"),
    projectDir: projectDir === undefined ? undefined : expandHome(projectDir),
    claudeBinary: text("claudeBinary") ?? "claude",
    turnTimeoutMs: number("turnTimeoutMs", 30 * 60_000),
    idleTimeoutMs:
      typeof config.idleTimeoutMs === "number" &&
      Number.isFinite(config.idleTimeoutMs) &&
      config.idleTimeoutMs >= 0
        ? config.idleTimeoutMs
        : DEFAULT_IDLE_TIMEOUT_MS,
    maxBodyBytes: number("maxBodyBytes", 8 * 1024 * 1024),
    allowedTools: strings("allowedTools"),
    env,
  };
}
