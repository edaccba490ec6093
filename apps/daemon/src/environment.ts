import { access, constants } from "node:fs/promises";
import { delimiter, isAbsolute, join } from "node:path";
import {
  defaultAcpCommands,
  defaultAgentCommands,
  restrictionsToDisallowedTools,
} from "@gstack/agent-runner";
import type { DispatchSettings, GstackLayout } from "@gstack/contracts";
import { DaemonError, DEFAULT_DISALLOWED_TOOLS, loadRestrictions } from "@gstack/daemon-client";
import { readDispatchSecret } from "./token";

/** What start-up needs to check the machine. */
export interface EnvironmentOptions {
  layout: GstackLayout;
  settings: DispatchSettings;
  log: (line: string) => void;
  /** The Claude Code binary; defaults to the configured command or `claude` on PATH. */
  claudeBinary?: string;
}

/** What start-up found: which agents can run, the secret, the tool rules. */
export interface AgentEnvironment {
  secret: string | undefined;
  claudeBinary: string | undefined;
  knownAgents: string[];
  disallowedTools: string[];
}

const AGENT_NAMES = ["claude", "codex", "cursor", "gemini"] as const;

/** The program as found on PATH (or the absolute path given), when it can be run. */
export async function findOnPath(program: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const candidates = isAbsolute(program)
    ? [program]
    : (env.PATH ?? "").split(delimiter).map((dir) => join(dir, program));
  for (const candidate of candidates) {
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return undefined;
}

/**
 * Checks the machine before the daemon takes work: the dispatch secret, which agents are
 * installed and the tool restrictions (the delivery reads its own credentials). Throws a
 * {@link DaemonError} with one sentence on a problem a person must fix.
 */
export async function checkEnvironment(options: EnvironmentOptions): Promise<AgentEnvironment> {
  const { layout, settings, log } = options;
  const env = process.env;
  const secret = await readDispatchSecret(layout).catch((error: Error) => {
    throw new DaemonError(`dispatch secret: ${error.message.split("\n").join(" ")}`, { cause: error });
  });
  if (settings.require_signature && !secret) {
    throw new DaemonError(`require_signature is set but there is no secret at ${layout.dispatchSecret}`);
  }
  const agents = settings.agents ?? {};
  const claude = options.claudeBinary ?? agents.claude?.command[0] ?? "claude";
  const claudePath = await findOnPath(claude, env);
  const known: string[] = [];
  if (claudePath) known.push("claude");
  // The built-in agents, then every other name the config gives one, then the ACP adapters that
  // have a default command (claude-acp, codex-acp) when installed.
  const names = [...new Set([...AGENT_NAMES, ...Object.keys(agents), ...Object.keys(defaultAcpCommands)])];
  for (const name of names) {
    if (name === "claude") continue;
    const configured = agents[name]?.command[0];
    const program =
      configured ??
      defaultAgentCommands[name as keyof typeof defaultAgentCommands]?.command[0] ??
      defaultAcpCommands[name]?.command[0];
    if (!program) continue;
    if (await findOnPath(program, env)) known.push(name);
    else if (configured) {
      log(
        `warning: agent '${name}' is configured but '${program}' is not on PATH; its dispatches are refused`,
      );
    }
  }
  if (known.length === 0) {
    throw new DaemonError(
      `'${claude}' is not on PATH (${env.PATH ?? ""}); install Claude Code or set dispatch.agents in ${layout.config}`,
    );
  }
  const restrictions = await loadRestrictions(layout).catch((error: Error) => {
    throw new DaemonError(error.message, { cause: error });
  });
  return {
    secret,
    claudeBinary: claudePath,
    knownAgents: known,
    disallowedTools: [
      ...DEFAULT_DISALLOWED_TOOLS,
      ...restrictionsToDisallowedTools(restrictions),
      ...(settings.disallowed_tools ?? []),
    ],
  };
}
