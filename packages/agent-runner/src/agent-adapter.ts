import type { AgentCommand } from "@gstack/contracts";
import { AcpTracker } from "./acp-tracker";
import { AgentRunnerError } from "./agent-runner-error";
import { assertSafeArguments, buildClaudeArgs } from "./claude-args";
import { ClaudeStreamTracker } from "./claude-stream-tracker";
import { JsonLinesTracker } from "./json-lines-tracker";
import type { OutputTracker } from "./output-tracker";

/** What an adapter needs to build one run's command line. */
export interface AdapterRunOptions {
  prompt: string;
  allowedTools?: readonly string[];
  disallowedTools?: readonly string[];
  maxTurns?: number;
  /** Model name for agents that take one (Claude Code `--model`). */
  model?: string;
  /** Further arguments for the default command line, checked like everything else. */
  extraArgs?: readonly string[];
  /** Program to run instead of the adapter's default (e.g. an absolute path to `claude`). */
  binary?: string;
  /** A configured command line (`{prompt}` is replaced by the prompt) that replaces the default. */
  command?: AgentCommand;
  /** Git directories of the project (worktree and common), which a sandboxed agent must write to commit. */
  gitDirectories?: readonly string[];
  /** A spend cap the CLI enforces itself, in US dollars, when it can (Claude Code `--max-budget-usd`). */
  maxBudgetUsd?: number;
}

/** A program, its arguments and extra environment. */
export interface CommandLine {
  file: string;
  args: string[];
  env: Record<string, string>;
  /** Text the program reads on stdin (otherwise stdin is `/dev/null`). */
  stdin?: string;
}

/**
 * Prompts longer than this go to Claude Code on stdin: Linux refuses a single argument over
 * 128 KiB (E2BIG), and a dispatch prompt with many learnings can get there.
 */
export const maximumPromptArgumentBytes = 64 * 1024;

/** How to start one kind of coding agent and read its output. */
export interface AgentAdapter {
  /** The `target_agent` name. */
  readonly agent: string;
  /** Default program name, looked up on PATH. */
  readonly defaultBinary: string;
  /** Whether a finished run must end with a structured result (absence is then a failure). */
  readonly expectsResult: boolean;
  /**
   * Whether the built-in command line needs the project's git directories (even when git is not
   * tracked); a configured command never gets them.
   */
  readonly needsGitDirectories?: boolean;
  /**
   * `acp`: the program is an Agent Client Protocol agent. It gets the prompt over the protocol on
   * its stdin (see `acp-session.ts`), not on its command line, and its stdout is JSON-RPC.
   */
  readonly protocol?: "acp";
  commandLine(options: AdapterRunOptions): CommandLine;
  createTracker(): OutputTracker;
}

const promptPlaceholder = "{prompt}";

/**
 * Expands a configured command: every `{prompt}` in an argument becomes the prompt; when no
 * argument names it, the prompt goes last. Refuses arguments that bypass permission checks.
 */
export function expandCommand(
  command: AgentCommand,
  prompt: string,
  agent: string,
  binary?: string,
): CommandLine {
  const [program, ...rest] = command.command;
  if (program === undefined) throw new AgentRunnerError("invalid_option", `The ${agent} command is empty.`);
  assertSafeArguments(command.command, agent);
  const mentionsPrompt = rest.some((argument) => argument.includes(promptPlaceholder));
  const args = rest.map((argument) => argument.split(promptPlaceholder).join(prompt));
  if (!mentionsPrompt) args.push(prompt);
  return { file: binary ?? program, args, env: { ...(command.env ?? {}) } };
}

/** Claude Code, reporting in stream-json. */
export const claudeAdapter: AgentAdapter = {
  agent: "claude",
  defaultBinary: "claude",
  expectsResult: true,
  commandLine(options) {
    if (options.command) return expandCommand(options.command, options.prompt, "claude", options.binary);
    const promptOnStdin = Buffer.byteLength(options.prompt) > maximumPromptArgumentBytes;
    return {
      file: options.binary ?? "claude",
      args: buildClaudeArgs({
        prompt: options.prompt,
        allowedTools: options.allowedTools,
        disallowedTools: options.disallowedTools,
        maxTurns: options.maxTurns,
        model: options.model,
        extraArgs: options.extraArgs,
        promptOnStdin,
        ...(options.maxBudgetUsd !== undefined ? { maxBudgetUsd: options.maxBudgetUsd } : {}),
      }),
      env: {},
      stdin: promptOnStdin ? options.prompt : undefined,
    };
  },
  createTracker: () => new ClaudeStreamTracker(),
};

/** An adapter for a CLI driven by a configured command line, read as JSON lines or plain text. */
export function commandAdapter(agent: string, defaultCommand: AgentCommand): AgentAdapter {
  return {
    agent,
    defaultBinary: defaultCommand.command[0]!,
    expectsResult: false,
    commandLine(options) {
      return expandCommand(options.command ?? defaultCommand, options.prompt, agent, options.binary);
    },
    createTracker: () => new JsonLinesTracker(),
  };
}

/**
 * The Codex CLI (`codex exec --json`) in its `workspace-write` sandbox. That sandbox keeps `.git`
 * read-only, so commits fail; the project's git directories are added as writable roots (and
 * nothing else), which lets the agent commit without leaving the sandbox.
 */
export const codexAdapter: AgentAdapter = {
  agent: "codex",
  defaultBinary: "codex",
  expectsResult: false,
  needsGitDirectories: true,
  commandLine(options) {
    if (options.command) return expandCommand(options.command, options.prompt, "codex", options.binary);
    const args = ["exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check"];
    if (options.model) args.push("--model", options.model);
    args.push(...(options.extraArgs ?? []));
    assertSafeArguments(args, "codex");
    if (options.gitDirectories && options.gitDirectories.length > 0) {
      args.push("-c", `sandbox_workspace_write.writable_roots=${JSON.stringify(options.gitDirectories)}`);
    }
    args.push("--", options.prompt);
    return { file: options.binary ?? "codex", args, env: {} };
  },
  createTracker: () => new JsonLinesTracker(),
};

/** Default command lines: each CLI's non-interactive mode, edits allowed inside the project only. */
export const defaultAgentCommands: Readonly<Record<"codex" | "gemini" | "cursor", AgentCommand>> = {
  codex: {
    command: [
      "codex",
      "exec",
      "--json",
      "--sandbox",
      "workspace-write",
      "--skip-git-repo-check",
      "--",
      "{prompt}",
    ],
  },
  gemini: {
    command: [
      "gemini",
      "--output-format",
      "stream-json",
      "--approval-mode",
      "auto_edit",
      "--prompt",
      "{prompt}",
    ],
  },
  cursor: { command: ["cursor-agent", "--print", "--output-format", "stream-json", "{prompt}"] },
};

/**
 * An Agent Client Protocol agent started from its command line as written (no `{prompt}`: the
 * prompt goes over the protocol). Its stdout is read as JSON-RPC by {@link AcpTracker}.
 */
export function acpAdapter(agent: string, defaultCommand: AgentCommand): AgentAdapter {
  return {
    agent,
    defaultBinary: defaultCommand.command[0]!,
    expectsResult: true,
    protocol: "acp",
    commandLine(options) {
      const command = options.command ?? defaultCommand;
      const [program, ...args] = command.command;
      if (program === undefined)
        throw new AgentRunnerError("invalid_option", `The ${agent} command is empty.`);
      assertSafeArguments(command.command, agent);
      if (command.command.some((argument) => argument.includes(promptPlaceholder))) {
        throw new AgentRunnerError(
          "invalid_option",
          `The ${agent} command speaks ACP, which takes the prompt over the protocol: remove ${promptPlaceholder} from it.`,
        );
      }
      return { file: options.binary ?? program, args, env: { ...(command.env ?? {}) } };
    },
    createTracker: () => new AcpTracker(),
  };
}

/**
 * Default command lines of agents that ship an Agent Client Protocol mode, used when the config
 * names none: Gemini CLI's `--experimental-acp`, and Zed's adapters for Claude Code and Codex
 * under names of their own (`claude` and `codex` keep their direct runners).
 */
export const defaultAcpCommands: Readonly<Record<string, AgentCommand>> = {
  gemini: { command: ["gemini", "--experimental-acp"], protocol: "acp" },
  "claude-acp": { command: ["claude-code-acp"], protocol: "acp" },
  "codex-acp": { command: ["codex-acp"], protocol: "acp" },
};

/**
 * The adapter for a `target_agent`: a configured command decides how the agent is run (`protocol:
 * "acp"` or a plain command line); without one, Claude Code and Codex have their direct runners,
 * agents with an ACP mode run through it, Cursor runs its print mode, and any other name needs a
 * configured command.
 */
export function adapterFor(agent: string, command?: AgentCommand): AgentAdapter {
  if (command?.protocol === "acp") return acpAdapter(agent, command);
  if (agent === "claude") return claudeAdapter;
  if (agent === "codex") return codexAdapter;
  if (command) return commandAdapter(agent, command);
  const acp = defaultAcpCommands[agent];
  if (acp) return acpAdapter(agent, acp);
  const known = defaultAgentCommands[agent as keyof typeof defaultAgentCommands];
  if (known) return commandAdapter(agent, known);
  throw new AgentRunnerError("unknown_agent", `No adapter for agent "${agent}": configure a command for it.`);
}
