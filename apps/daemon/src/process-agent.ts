import { spawn } from "node:child_process";
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { dirname } from "node:path";
import type {
  AgentFailure,
  AgentProgress,
  AgentRunResult,
  AgentStarter,
  RunningAgent,
  StartAgentOptions,
} from "./agent-types";

const MAX_LINE = 1024 * 1024;
const KILL_GRACE_MS = 3000;
/** How much plain (non stream-json) output is kept as the final answer of other agents. */
const MAX_PLAIN_TEXT = 64 * 1024;

/** The command line for one run: Claude Code's print mode, or the configured command. */
export function agentCommandLine(options: StartAgentOptions): string[] {
  if (options.command && options.command.length > 0) {
    return options.command.map((part) => part.replaceAll("{prompt}", options.prompt));
  }
  if (options.agent !== "claude") {
    throw new Error(`no command line configured for agent '${options.agent}'`);
  }
  const line = [
    options.binary ?? "claude",
    "--print",
    "--permission-mode",
    "acceptEdits",
    "--output-format",
    "stream-json",
    "--verbose",
  ];
  if (options.allowedTools && options.allowedTools.length > 0)
    line.push("--allowedTools", ...options.allowedTools);
  if (options.disallowedTools && options.disallowedTools.length > 0) {
    line.push("--disallowedTools", ...options.disallowedTools);
  }
  line.push("--", options.prompt);
  return line;
}

interface StreamEvent {
  type?: string;
  subtype?: string;
  session_id?: string;
  is_error?: boolean;
  api_error_status?: number | null;
  terminal_reason?: string;
  result?: string;
  total_cost_usd?: number;
  num_turns?: number;
  error?: string;
  message?: { content?: Array<{ type?: string; text?: string; name?: string; input?: unknown }> };
}

function describeToolUse(name: string | undefined, input: unknown): string {
  const record = (input ?? {}) as Record<string, unknown>;
  const detail = record.command ?? record.file_path ?? record.path ?? record.pattern ?? "";
  return `${name ?? "tool"}${detail ? ` ${String(detail).slice(0, 120)}` : ""}`;
}

/** Classifies a failed run from the final stream-json result, structured fields first. */
export function classifyFromResult(
  event: StreamEvent | undefined,
  assistantError: string | undefined,
): AgentFailure {
  const status = event?.api_error_status ?? undefined;
  const reason = event?.terminal_reason;
  const text = `${event?.result ?? ""}`;
  if (status === 429 || assistantError === "rate_limit") {
    return {
      kind: "rate_limit",
      retryable: true,
      message: text || "rate limited",
      retryWithoutLearnings: false,
    };
  }
  if (reason === "prompt_too_long" || /prompt is too long/i.test(text)) {
    return {
      kind: "context_overflow",
      retryable: true,
      message: text || "prompt too long",
      retryWithoutLearnings: true,
    };
  }
  if (status === 401 || status === 403 || assistantError === "authentication_failed") {
    return {
      kind: "auth",
      retryable: false,
      message: text || "authentication failed",
      retryWithoutLearnings: false,
    };
  }
  if ((status !== undefined && status !== null && status >= 500) || assistantError === "server_error") {
    return {
      kind: "tool_failure",
      retryable: true,
      message: text || "server error",
      retryWithoutLearnings: false,
    };
  }
  return {
    kind: "logic_error",
    retryable: false,
    message: text || "the agent did not finish",
    retryWithoutLearnings: false,
  };
}

/**
 * Starts an agent as the leader of its own process group with stdin on /dev/null, keeps
 * its output in `streamFile`, follows Claude Code's stream-json for progress, and ends it
 * by signalling the whole group.
 */
export const startProcessAgent: AgentStarter = (options) => {
  const [program, ...args] = agentCommandLine(options);
  if (!program) throw new Error("empty agent command line");
  const child = spawn(program, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stream: WriteStream | undefined;
  if (options.streamFile) {
    mkdirSync(dirname(options.streamFile), { recursive: true });
    stream = createWriteStream(options.streamFile, { flags: "a" });
  }
  const progress: AgentProgress = { turns: 0, toolUses: 0 };
  let resultEvent: StreamEvent | undefined;
  let assistantError: string | undefined;
  let cancelled = false;
  let timedOut = false;
  let pending = "";
  let spawnError: Error | undefined;
  let stderrTail = "";
  let plainText = "";

  const handleLine = (line: string) => {
    if (!line.startsWith("{")) {
      plainText = `${plainText}${line}\n`.slice(-MAX_PLAIN_TEXT);
      if (line.trim()) progress.lastText = line.trim().slice(0, 2000);
      return;
    }
    let event: StreamEvent;
    try {
      event = JSON.parse(line) as StreamEvent;
    } catch {
      return;
    }
    if (event.session_id) progress.sessionId = event.session_id;
    if (event.type === "assistant") {
      progress.turns += 1;
      if (event.error) assistantError = event.error;
      for (const block of event.message?.content ?? []) {
        if (block.type === "text" && block.text) progress.lastText = block.text.slice(0, 8000);
        if (block.type === "tool_use") {
          progress.toolUses += 1;
          progress.lastAction = describeToolUse(block.name, block.input);
        }
      }
    } else if (event.type === "result") {
      resultEvent = event;
      if (typeof event.total_cost_usd === "number") progress.costUsd = event.total_cost_usd;
      if (typeof event.num_turns === "number") progress.turns = event.num_turns;
    }
    options.onProgress?.({ ...progress });
  };

  child.stdout?.on("data", (chunk: Buffer) => {
    stream?.write(chunk);
    pending += chunk.toString("utf8");
    let newline = pending.indexOf("\n");
    while (newline >= 0) {
      handleLine(pending.slice(0, newline));
      pending = pending.slice(newline + 1);
      newline = pending.indexOf("\n");
    }
    if (pending.length > MAX_LINE) pending = "";
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString("utf8")).slice(-4000);
  });

  let killTimer: NodeJS.Timeout | undefined;
  const signalGroup = (signal: NodeJS.Signals) => {
    if (child.pid === undefined) return;
    try {
      process.kill(-child.pid, signal);
    } catch {
      // The group is already gone.
    }
  };
  const stop = () => {
    signalGroup("SIGTERM");
    killTimer ??= setTimeout(() => signalGroup("SIGKILL"), KILL_GRACE_MS);
  };
  const timeout =
    options.timeoutMs !== undefined
      ? setTimeout(() => {
          timedOut = true;
          stop();
        }, options.timeoutMs)
      : undefined;

  const done = new Promise<AgentRunResult>((resolve) => {
    child.on("error", (error) => {
      spawnError = error;
    });
    child.on("close", (exitCode, signal) => {
      if (pending) handleLine(pending);
      if (timeout) clearTimeout(timeout);
      // Children of the agent may still hold the group: make sure none outlive it.
      signalGroup("SIGKILL");
      if (killTimer) clearTimeout(killTimer);
      stream?.end();
      const run: AgentRunResult = {
        exitCode,
        signal,
        cancelled,
        timedOut,
        progress: { ...progress },
      };
      if (resultEvent?.result !== undefined) run.result = resultEvent.result;
      else if (plainText.trim()) run.result = plainText.trim();
      else if (progress.lastText !== undefined) run.result = progress.lastText;
      if (spawnError) {
        run.failure = {
          kind: "spawn_error",
          retryable: false,
          message: spawnError.message,
          retryWithoutLearnings: false,
        };
      } else if (timedOut) {
        run.failure = {
          kind: "timeout",
          retryable: false,
          message: "the session timed out",
          retryWithoutLearnings: false,
        };
      } else if (cancelled) {
        run.failure = {
          kind: "cancelled",
          retryable: false,
          message: "cancelled",
          retryWithoutLearnings: false,
        };
      } else if (exitCode !== 0 || resultEvent?.is_error) {
        const failure = classifyFromResult(resultEvent, assistantError);
        if (!resultEvent && stderrTail.trim())
          failure.message = stderrTail.trim().split("\n").slice(-3).join(" ");
        run.failure = failure;
      }
      resolve(run);
    });
  });

  const running: RunningAgent = {
    pid: child.pid ?? -1,
    done,
    cancel: () => {
      cancelled = true;
      stop();
    },
    progress: () => ({ ...progress }),
  };
  return running;
};
