import type { z } from "zod";
import { lazySchema, lazyValue } from "../lazy";
import { budgetUsdSchema, httpUrlSchema, nonEmptyString, targetAgentSchema } from "./common";

/** How the daemon starts one kind of coding agent. `{prompt}` in an argument is replaced by the prompt. */
export const agentCommandSchema = lazySchema((z) =>
  z.looseObject({
    command: z
      .array(z.string().min(1))
      .min(1)
      .describe("Program and arguments, e.g. ['codex', 'exec', '{prompt}']."),
    env: z.record(z.string(), z.string()).optional(),
    protocol: z
      .enum(["acp"])
      .optional()
      .describe(
        "How the daemon talks to the agent: 'acp' runs the command as an Agent Client Protocol agent on its stdin and stdout (the prompt is sent over the protocol, not on the command line); absent, the command is run once with the prompt as an argument.",
      ),
  }),
);
export type AgentCommand = z.output<typeof agentCommandSchema>;

const maxConcurrent = lazySchema((z) => z.int().min(1).max(32));
const trustedRepos = lazySchema((z) =>
  z
    .array(z.string().min(1))
    .describe("Project folders (globs allowed, '~' expands) that dispatches may work in."),
);
const sessionTimeoutSeconds = lazySchema((z) => z.int().min(60).max(86_400));
const heartbeatSeconds = lazySchema((z) => z.int().min(5).max(3600));
const shutdownGraceSeconds = lazySchema((z) => z.int().min(0).max(3600));
const maxQueued = lazySchema((z) =>
  z
    .int()
    .min(1)
    .max(100_000)
    .describe("Dispatches that may wait in the queue before the service API answers queue_full."),
);

const defaults = {
  max_concurrent: 2,
  trusted_repos: [] as string[],
  session_timeout_seconds: 3600,
  heartbeat_seconds: 30,
  shutdown_grace_seconds: 300,
  max_queued: 1000,
};

const settingsWithoutDefaults = lazyValue((z) => ({
  clawvisor_url: httpUrlSchema.optional(),
  openclaw_hooks_url: httpUrlSchema
    .optional()
    .describe(
      "OpenClaw's hooks endpoint that gets each completion as a readable message, e.g. http://127.0.0.1:18789/hooks/agent (or /hooks/wake); its token is read from .openclaw-hooks-token (0600).",
    ),
  openclaw_callback_url: httpUrlSchema
    .optional()
    .describe(
      "The OpenClaw plugin's gstack receiver route that gets each completion as a signed completion-callback (secret: .callback-secret, 0600).",
    ),
  require_signature: z
    .boolean()
    .optional()
    .describe("Reject unsigned dispatches; defaults to true when a secret exists."),
  allowed_tools: z
    .array(nonEmptyString)
    .optional()
    .describe("Claude Code --allowedTools beyond the defaults."),
  disallowed_tools: z
    .array(nonEmptyString)
    .optional()
    .describe("Claude Code --disallowedTools beyond the restrictions."),
  agents: z
    .record(targetAgentSchema, agentCommandSchema)
    .optional()
    .describe(
      "Agents by the name a dispatch's target_agent gives: the built-in claude, codex, cursor and gemini, or any other.",
    ),
  api_port: z
    .int()
    .min(1)
    .max(65_535)
    .optional()
    .describe(
      "Also serve the local service API over TCP on this port (with the bearer token in .api-token, 0600); the Unix socket dispatch/.api.sock is always served.",
    ),
  in_place_projects: z
    .array(nonEmptyString)
    .optional()
    .describe(
      "Project slugs whose dispatches run in the project's own checkout instead of a worktree of their own; one at a time per checkout.",
    ),
  worktree_retention_days: z
    .int()
    .min(1)
    .max(3650)
    .optional()
    .describe(
      "Days a finished dispatch's worktree awaiting landing is kept before start-up removes it (its branch stays); kept until landed or discarded when absent.",
    ),
  api_host: nonEmptyString
    .optional()
    .describe("Address the TCP service API binds to; 127.0.0.1 unless set. Only used with api_port."),
  default_budget_usd: budgetUsdSchema
    .optional()
    .describe("The spend cap, in US dollars, of a dispatch that names no budget_usd; no cap unless set."),
  plan_first_repos: z
    .array(z.string().min(1))
    .optional()
    .describe(
      "Project folders (globs allowed, '~' expands) whose dispatches are planned read-only and wait for a person's approval before they may change anything; others run at once.",
    ),
  awaiting_expiry_hours: z
    .number()
    .positive()
    .max(8760)
    .optional()
    .describe("Hours a dispatch waits for an answer before it ends cancelled as expired (default 72)."),
}));

/** The daemon's dispatch settings, with defaults applied (see `resolveDispatchSettings`). */
export const dispatchSettingsSchema = lazySchema((z) =>
  z.looseObject({
    max_concurrent: maxConcurrent.default(defaults.max_concurrent),
    trusted_repos: trustedRepos.default(defaults.trusted_repos),
    session_timeout_seconds: sessionTimeoutSeconds.default(defaults.session_timeout_seconds),
    heartbeat_seconds: heartbeatSeconds.default(defaults.heartbeat_seconds),
    shutdown_grace_seconds: shutdownGraceSeconds.default(defaults.shutdown_grace_seconds),
    max_queued: maxQueued.default(defaults.max_queued),
    ...settingsWithoutDefaults(),
  }),
);
export type DispatchSettings = z.output<typeof dispatchSettingsSchema>;

const flatInteger = lazySchema((z) =>
  z.union([z.int(), z.string().regex(/^[0-9]+$/, { message: "must be a whole number" })]),
);
const flatBoolean = lazySchema((z) => z.union([z.boolean(), z.enum(["true", "false"])]));
const flatList = lazySchema((z) => z.union([z.array(z.string()), z.string()]));

/**
 * `config.yaml` under the gstack state root. gstack's own `gstack-config` writes flat keys
 * (`dispatch_max_concurrent: 4`), while the design nests them (`dispatch: {max_concurrent: 4}`).
 * Both are accepted; when both name the same setting the flat key wins, because it is the one
 * gstack's tooling can change. Other gstack keys (telemetry, proactive, ...) are kept.
 */
/**
 * The nested `dispatch:` block as written. Nothing is filled in here, so that
 * `resolveDispatchSettings` sees only what the user wrote and a default is never mistaken
 * for a nested value that conflicts with a flat key; the defaults appear as annotations.
 */
const dispatchBlockSchema = lazySchema((z) =>
  z.looseObject({
    max_concurrent: maxConcurrent.optional().meta({ default: defaults.max_concurrent }),
    trusted_repos: trustedRepos.optional().meta({ default: defaults.trusted_repos }),
    session_timeout_seconds: sessionTimeoutSeconds
      .optional()
      .meta({ default: defaults.session_timeout_seconds }),
    heartbeat_seconds: heartbeatSeconds.optional().meta({ default: defaults.heartbeat_seconds }),
    shutdown_grace_seconds: shutdownGraceSeconds
      .optional()
      .meta({ default: defaults.shutdown_grace_seconds }),
    max_queued: maxQueued.optional().meta({ default: defaults.max_queued }),
    ...settingsWithoutDefaults(),
  }),
);

export const daemonConfigFileSchema = lazySchema((z) =>
  z
    .looseObject({
      dispatch: dispatchBlockSchema.optional(),
      dispatch_max_concurrent: flatInteger.optional(),
      dispatch_trusted_repos: flatList.optional(),
      dispatch_session_timeout_seconds: flatInteger.optional(),
      dispatch_heartbeat_seconds: flatInteger.optional(),
      dispatch_shutdown_grace_seconds: flatInteger.optional(),
      dispatch_max_queued: flatInteger.optional(),
      dispatch_api_port: flatInteger.optional(),
      dispatch_api_host: z.string().optional(),
      dispatch_clawvisor_url: z.string().optional(),
      dispatch_openclaw_hooks_url: z.string().optional(),
      dispatch_openclaw_callback_url: z.string().optional(),
      dispatch_require_signature: flatBoolean.optional(),
      dispatch_allowed_tools: flatList.optional(),
      dispatch_disallowed_tools: flatList.optional(),
      dispatch_default_budget_usd: z
        .union([
          z.number(),
          z.string().regex(/^[0-9]+(\.[0-9]+)?$/, { message: "must be an amount in dollars" }),
        ])
        .optional(),
    })
    .describe("gstack's config.yaml, as far as the dispatch daemon reads it."),
);
export type DaemonConfigFile = z.output<typeof daemonConfigFileSchema>;
