import { type AgentRunResult, describeToolUse, type RunningAgent, startAgent } from "@gstack/agent-runner";

/** One turn of a Claude Code session. */
export interface ClaudeTurnOptions {
  binary: string;
  cwd: string;
  prompt: string;
  /** Continue this Claude Code session (`--resume`); a new session when absent. */
  resumeSessionId?: string;
  /** The OpenClaw session key, given to Claude Code as `OPENCLAW_SESSION` (gstack: a spawned session). */
  sessionKey: string;
  env: Record<string, string | undefined>;
  allowedTools: readonly string[];
  disallowedTools: readonly string[];
  timeoutMs: number;
  /** Claude's text, as it is streamed. */
  onText: (text: string) => void;
  /** A tool call, described in a few words (`Write hello.txt`, `Bash: git status`). */
  onToolUse: (description: string) => void;
  /** The session id, as soon as Claude Code reports it. */
  onSessionId: (sessionId: string) => void;
}

/** Token counts from Claude Code's `result` event. */
export interface ClaudeUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheCreationTokens: number;
}

export interface ClaudeTurn {
  /** The process (and process group) id. */
  pid: number | undefined;
  /** Settles when the process and its whole group are gone. */
  done: Promise<{ run: AgentRunResult; usage?: ClaudeUsage; streamedText: boolean }>;
  cancel(reason: string): Promise<void>;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null;
const count = (value: unknown) => (typeof value === "number" && Number.isFinite(value) ? value : 0);

/** What a turn says, as read from Claude Code's stream-json events. */
export interface ClaudeTurnReader {
  onEvent(event: unknown): void;
  /** Whether any text was said. */
  streamedText(): boolean;
  /** The token counts of the turn's `result` event, once it came. */
  usage(): ClaudeUsage | undefined;
}

/**
 * Reads one turn's stream-json events (`--include-partial-messages`): text as it is streamed
 * (a message already streamed as deltas is not said again from its whole `assistant` event),
 * tool calls in a few words, the session id from `system/init`, the usage from `result`.
 */
export function claudeTurnReader(
  options: Pick<ClaudeTurnOptions, "onText" | "onToolUse" | "onSessionId">,
): ClaudeTurnReader {
  const streamedMessages = new Set<string>();
  let currentMessage: string | undefined;
  let streamedText = false;
  let usage: ClaudeUsage | undefined;

  const text = (said: string) => {
    if (said.length === 0) return;
    streamedText = true;
    options.onText(said);
  };

  const onEvent = (event: unknown) => {
    if (!isObject(event)) return;
    switch (event.type) {
      case "system":
        if (event.subtype === "init" && typeof event.session_id === "string")
          options.onSessionId(event.session_id);
        return;
      case "stream_event": {
        const inner = isObject(event.event) ? event.event : undefined;
        if (
          inner?.type === "message_start" &&
          isObject(inner.message) &&
          typeof inner.message.id === "string"
        ) {
          currentMessage = inner.message.id;
        }
        if (
          inner?.type === "content_block_delta" &&
          isObject(inner.delta) &&
          inner.delta.type === "text_delta"
        ) {
          if (currentMessage) streamedMessages.add(currentMessage);
          text(String(inner.delta.text ?? ""));
        }
        return;
      }
      case "assistant": {
        const message = isObject(event.message) ? event.message : undefined;
        // The CLI words an API failure as a synthetic assistant message; it becomes the error answer instead.
        if (event.error !== undefined || message?.model === "<synthetic>") return;
        const id = typeof message?.id === "string" ? message.id : undefined;
        const content = Array.isArray(message?.content) ? message.content : [];
        for (const block of content) {
          if (!isObject(block)) continue;
          if (block.type === "tool_use")
            options.onToolUse(describeToolUse(String(block.name ?? "tool"), block.input));
          // Text already streamed as deltas is not said twice.
          else if (block.type === "text" && (id === undefined || !streamedMessages.has(id)))
            text(String(block.text ?? ""));
        }
        return;
      }
      case "result": {
        const reported = isObject(event.usage) ? event.usage : {};
        usage = {
          inputTokens: count(reported.input_tokens),
          outputTokens: count(reported.output_tokens),
          cacheReadTokens: count(reported.cache_read_input_tokens),
          cacheCreationTokens: count(reported.cache_creation_input_tokens),
        };
        return;
      }
      default:
        return;
    }
  };

  return { onEvent, streamedText: () => streamedText, usage: () => usage };
}

/**
 * Starts one Claude Code turn through the agent runner the dispatches use (its permission mode,
 * tool grants and process-group handling; never a permission bypass), asking for partial
 * messages so text arrives as the model writes it.
 */
export function startClaudeTurn(options: ClaudeTurnOptions): ClaudeTurn {
  const reader = claudeTurnReader(options);
  const agent: RunningAgent = startAgent({
    agent: "claude",
    binary: options.binary,
    cwd: options.cwd,
    prompt: options.prompt,
    allowedTools: options.allowedTools,
    disallowedTools: options.disallowedTools,
    extraArgs: [
      "--include-partial-messages",
      ...(options.resumeSessionId ? ["--resume", options.resumeSessionId] : []),
    ],
    env: { ...options.env, OPENCLAW_SESSION: options.sessionKey },
    timeoutMs: options.timeoutMs,
    killGraceMs: 2_000,
    trackGit: false,
    onEvent: reader.onEvent,
  });
  return {
    pid: agent.pid,
    done: agent.done.then((run) => {
      const usage = reader.usage();
      return { run, ...(usage ? { usage } : {}), streamedText: reader.streamedText() };
    }),
    cancel: (reason) => agent.cancel(reason),
  };
}
