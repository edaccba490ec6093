import { ContractError } from "./errors";
import { toContractIssues } from "./issues";
import {
  type DaemonConfigFile,
  type DispatchSettings,
  dispatchSettingsSchema,
} from "./schemas/daemon-config";

/** A setting given both flat and nested with different values. */
export interface ConfigConflict {
  setting: string;
  flat: unknown;
  nested: unknown;
}

function splitList(value: string | string[]): string[] {
  if (Array.isArray(value)) return value;
  return value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
}

const flatReaders: Record<string, (value: unknown) => unknown> = {
  max_concurrent: Number,
  trusted_repos: (value) => splitList(value as string | string[]),
  session_timeout_seconds: Number,
  heartbeat_seconds: Number,
  shutdown_grace_seconds: Number,
  max_queued: Number,
  api_port: Number,
  api_host: String,
  clawvisor_url: String,
  openclaw_hooks_url: String,
  openclaw_callback_url: String,
  require_signature: (value) => value === true || value === "true",
  allowed_tools: (value) => splitList(value as string | string[]),
  disallowed_tools: (value) => splitList(value as string | string[]),
  default_budget_usd: Number,
};

/**
 * Resolves the dispatch settings from a parsed `config.yaml`: nested `dispatch:` values,
 * overridden by gstack's flat `dispatch_*` keys, then defaults. Reports every setting given
 * both ways with different values so the caller can warn.
 */
export function resolveDispatchSettings(
  file: DaemonConfigFile,
  options: { source?: string } = {},
): { settings: DispatchSettings; conflicts: ConfigConflict[] } {
  const merged: Record<string, unknown> = { ...(file.dispatch ?? {}) };
  const conflicts: ConfigConflict[] = [];
  const fromFlatKey = new Set<string>();
  for (const [setting, read] of Object.entries(flatReaders)) {
    const raw = (file as Record<string, unknown>)[`dispatch_${setting}`];
    if (raw === undefined) continue;
    const value = read(raw);
    const nested = merged[setting];
    if (nested !== undefined && JSON.stringify(nested) !== JSON.stringify(value)) {
      conflicts.push({ setting, flat: value, nested });
    }
    merged[setting] = value;
    fromFlatKey.add(setting);
  }
  const result = dispatchSettingsSchema.safeParse(merged, { reportInput: true });
  if (!result.success) {
    throw new ContractError({
      kind: "daemon-config",
      source: options.source ?? "config.yaml",
      // Name the key the user actually wrote: `dispatch_max_concurrent` for a flat value,
      // `dispatch.max_concurrent` for a nested one.
      issues: toContractIssues(result.error.issues).map((issue, index) => {
        const setting = result.error.issues[index]?.path[0];
        const flat = typeof setting === "string" && fromFlatKey.has(setting);
        const rest = issue.path.slice(String(setting ?? "").length);
        return { ...issue, path: flat ? `dispatch_${String(setting)}${rest}` : `dispatch.${issue.path}` };
      }),
      cause: result.error,
    });
  }
  return { settings: result.data, conflicts };
}
