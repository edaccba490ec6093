import { AgentRunnerError } from "./agent-runner-error";
import { defaultAllowedTools, findUnsafeArgument } from "./tool-permissions";

export interface ClaudeArgsOptions {
  prompt: string;
  /** Tools granted beyond {@link defaultAllowedTools}. */
  allowedTools?: readonly string[];
  /** Leave the defaults out and grant only `allowedTools`. */
  replaceDefaultAllowedTools?: boolean;
  disallowedTools?: readonly string[];
  maxTurns?: number;
  model?: string;
  /** Resume an earlier session (only works from its original working directory). */
  resumeSessionId?: string;
  /** Further arguments, inserted before the prompt. */
  extraArgs?: readonly string[];
  /** Leave the prompt out: it is given on stdin instead (for prompts too long for one argument). */
  promptOnStdin?: boolean;
  /** `--max-budget-usd`: Claude Code stops itself once its cost reaches this many US dollars. */
  maxBudgetUsd?: number;
}

/**
 * Arguments for a non-interactive Claude Code run that reports in stream-json:
 * `--print --permission-mode acceptEdits --output-format stream-json --verbose`, the tool grants
 * and bans, then `--` and the prompt (so a prompt starting with `-` stays a prompt and the
 * variadic tool lists cannot swallow it). Refuses anything that bypasses permissions.
 */
export function buildClaudeArgs(options: ClaudeArgsOptions): string[] {
  if (options.prompt.length === 0) throw new AgentRunnerError("invalid_option", "The prompt is empty.");
  const args = ["--print", "--permission-mode", "acceptEdits", "--output-format", "stream-json", "--verbose"];
  const allowed = [
    ...(options.replaceDefaultAllowedTools ? [] : defaultAllowedTools),
    ...(options.allowedTools ?? []),
  ];
  const uniqueAllowed = [...new Set(allowed)];
  if (uniqueAllowed.length > 0) args.push("--allowedTools", ...uniqueAllowed);
  const disallowed = [...new Set(options.disallowedTools ?? [])];
  if (disallowed.length > 0) args.push("--disallowedTools", ...disallowed);
  if (options.maxTurns !== undefined) {
    if (!Number.isInteger(options.maxTurns) || options.maxTurns < 1) {
      throw new AgentRunnerError(
        "invalid_option",
        `maxTurns must be a whole number of at least 1, got ${options.maxTurns}.`,
      );
    }
    args.push("--max-turns", String(options.maxTurns));
  }
  if (options.model) args.push("--model", options.model);
  if (options.maxBudgetUsd !== undefined) {
    if (!(Number.isFinite(options.maxBudgetUsd) && options.maxBudgetUsd > 0)) {
      throw new AgentRunnerError(
        "invalid_option",
        `maxBudgetUsd must be an amount above 0, got ${options.maxBudgetUsd}.`,
      );
    }
    args.push("--max-budget-usd", String(options.maxBudgetUsd));
  }
  if (options.resumeSessionId) args.push("--resume", options.resumeSessionId);
  args.push(...(options.extraArgs ?? []));
  assertSafeArguments(args, "claude");
  if (!options.promptOnStdin) args.push("--", options.prompt);
  return args;
}

/** Throws when an argument would switch the agent's permission checks off. */
export function assertSafeArguments(args: readonly string[], agent: string): void {
  const unsafe = findUnsafeArgument(args, agent);
  if (unsafe !== undefined) {
    throw new AgentRunnerError(
      "unsafe_option",
      `Refusing to start ${agent} with "${unsafe}": dispatched agents never run with permission checks bypassed.`,
    );
  }
}
