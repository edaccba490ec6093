import { z } from "zod";
import { httpUrlSchema, nonEmptyString, targetAgentSchema } from "./common";

/** How the daemon starts one kind of coding agent. `{prompt}` in an argument is replaced by the prompt. */
export const agentCommandSchema = z.looseObject({
  command: z
    .array(z.string().min(1))
    .min(1)
    .describe("Program and arguments, e.g. ['codex', 'exec', '{prompt}']."),
  env: z.record(z.string(), z.string()).optional(),
});
export type AgentCommand = z.output<typeof agentCommandSchema>;

/** The `dispatch:` block of `config.yaml`, with defaults applied. */
export const dispatchSettingsSchema = z.looseObject({
  max_concurrent: z.int().min(1).max(32).default(2),
  trusted_repos: z
    .array(z.string().min(1))
    .default([])
    .describe("Project folders (globs allowed, '~' expands) that dispatches may work in."),
  session_timeout_seconds: z.int().min(60).max(86_400).default(3600),
  heartbeat_seconds: z.int().min(5).max(3600).default(30),
  shutdown_grace_seconds: z.int().min(0).max(3600).default(300),
  clawvisor_url: httpUrlSchema.optional(),
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
  agents: z.partialRecord(targetAgentSchema, agentCommandSchema).optional(),
});
export type DispatchSettings = z.output<typeof dispatchSettingsSchema>;

const flatInteger = z.union([z.int(), z.string().regex(/^[0-9]+$/, { message: "must be a whole number" })]);
const flatBoolean = z.union([z.boolean(), z.enum(["true", "false"])]);
const flatList = z.union([z.array(z.string()), z.string()]);

/**
 * `config.yaml` under the gstack state root. gstack's own `gstack-config` writes flat keys
 * (`dispatch_max_concurrent: 4`), while the design nests them (`dispatch: {max_concurrent: 4}`).
 * Both are accepted; when both name the same setting the flat key wins, because it is the one
 * gstack's tooling can change. Other gstack keys (telemetry, proactive, ...) are kept.
 */
export const daemonConfigFileSchema = z
  .looseObject({
    dispatch: dispatchSettingsSchema.partial().optional(),
    dispatch_max_concurrent: flatInteger.optional(),
    dispatch_trusted_repos: flatList.optional(),
    dispatch_session_timeout_seconds: flatInteger.optional(),
    dispatch_heartbeat_seconds: flatInteger.optional(),
    dispatch_shutdown_grace_seconds: flatInteger.optional(),
    dispatch_clawvisor_url: z.string().optional(),
    dispatch_require_signature: flatBoolean.optional(),
    dispatch_allowed_tools: flatList.optional(),
    dispatch_disallowed_tools: flatList.optional(),
  })
  .describe("gstack's config.yaml, as far as the dispatch daemon reads it.");
export type DaemonConfigFile = z.output<typeof daemonConfigFileSchema>;
