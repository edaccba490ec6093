import { join } from "node:path";
import { type RecordedRequest, type ScriptedStep, scripted, textOfContent } from "@gstack/scripted-model";
import { parseSseData } from "./openai-wire";

/** The real Claude Code CLI the end-to-end tests drive (installed for the daemon's tests). */
export const claudeForTests = join(
  import.meta.dirname,
  "..",
  "..",
  "..",
  "..",
  "apps",
  "daemon",
  "node_modules",
  ".bin",
  "claude",
);

/** The newest user text of a Messages request Claude Code sent. */
export function claudeNewestText(request: RecordedRequest): string {
  const messages = (request.body?.messages as { role?: string; content?: unknown }[] | undefined) ?? [];
  const last = [...messages].reverse().find((message) => message.role === "user");
  return last ? textOfContent(last.content) : "";
}

/** Gates a test opens: a request saying `HOLD-<x>` is held open until gate `<x>` settles, then answered. */
export const turnGates = new Map<string, Promise<void>>();

/** The `HANGONCE-<x>` marks already held once. */
const heldOnce = new Set<string>();

/**
 * The scripted model behind Claude Code: `HANG` makes it never answer; `HANGONCE-<x>` holds
 * the first request that says it and answers every later one; `TOOL:<file>` makes it
 * write the file first; otherwise it answers `ANSWER <mark>` for the last `MARK-<x>` it was told.
 */
export function contractorResponder(request: RecordedRequest): ScriptedStep {
  const newest = claudeNewestText(request);
  const toolResult =
    JSON.stringify(request.body?.messages ?? []).includes('"tool_result"') && !/MARK-/.test(newest);
  const marks = [...newest.matchAll(/MARK-([A-Za-z0-9]+)/g)].map((match) => match[1]);
  const once = /HANGONCE-([A-Za-z0-9]+)/.exec(newest)?.[1];
  if (once !== undefined && !heldOnce.has(once)) {
    heldOnce.add(once);
    return { type: "hang" };
  }
  if (newest.includes("HANG") && once === undefined) return { type: "hang" };
  if (newest.includes("FAIL-429")) return scripted.rateLimited();
  if (newest.includes("FAIL-529")) return scripted.overloaded();
  if (newest.includes("FAIL-CONTEXT")) return scripted.promptTooLong();
  if (newest.includes("FAIL-401"))
    return scripted.error(401, { errorType: "authentication_error", message: "invalid x-api-key" });
  const background = /BACKGROUND:(\S+)/.exec(request.firstUserText);
  if (background) {
    if (request.toolResultCount === 0) {
      const sessionKey = /OpenClaw session: ([^;.\s]+)/.exec(request.firstUserText)?.[1] ?? "";
      const dispatch = {
        id: `dispatch-${background[1]}`,
        dispatched_by: "openclaw",
        task: `Do ${background[1]} in the background`,
        project: "widget",
        project_dir: ".",
        reply_to: { runtime: "openclaw", session_key: sessionKey },
      };
      return scripted.write(".gstack-dispatch.json", JSON.stringify(dispatch));
    }
    if (request.toolResultCount === 1) return scripted.bash("gstack-dispatch submit .gstack-dispatch.json");
    return scripted.text("Handed to the gstack daemon; its report will come back here.");
  }
  const tool = /TOOL:(\S+)/.exec(newest);
  if (tool && !toolResult) return scripted.write(tool[1] as string, "written by the contractor\n");
  const gate = turnGates.get(/HOLD-([A-Za-z0-9]+)/.exec(newest)?.[1] ?? "");
  return scripted.text(`ANSWER ${marks.at(-1) ?? "after-tool"} from Claude Code.`, {
    chunkDelayMs: 5,
    ...(gate ? { holdUntil: gate } : {}),
  } as Partial<ScriptedStep>);
}

/** An OpenClaw-shaped Chat Completions body: its system prompt, runtime line, history and internal context. */
export function openclawBody(options: {
  sessionKey: string;
  sessionId?: string;
  /** Alternating user and assistant texts, ending with the newest user text. */
  conversation: string[];
  model?: string;
  stream?: boolean;
}): Record<string, unknown> {
  const messages: { role: string; content: unknown }[] = [
    {
      role: "system",
      content: `You are a personal assistant running inside OpenClaw.\n${"Tooling notes. ".repeat(200)}`,
    },
  ];
  options.conversation.forEach((text, index) => {
    const user = index % 2 === 0;
    const runtime =
      index === 0
        ? `\n\nRuntime: agent=claude-code | session=${options.sessionKey} | sessionId=${options.sessionId ?? "0b3c"} | host=vm | repo=/tmp/workspace | model=gstack-claude/claude-code`
        : "";
    messages.push({
      role: user ? "user" : "assistant",
      content: user ? `[Wed 2026-11-25 15:43 UTC] ${text}${runtime}` : text,
    });
  });
  messages.push({
    role: "user",
    content: [
      {
        type: "text",
        text: "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nActive exec sessions: none\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>",
      },
    ],
  });
  return {
    model: options.model ?? "claude-code",
    messages,
    stream: options.stream ?? true,
    stream_options: { include_usage: true },
    tools: [{ type: "function", function: { name: "read", parameters: { type: "object" } } }],
    store: false,
    max_completion_tokens: 4096,
  };
}

/** What a streamed answer came to: status, the text said, the parsed chunks. */
export interface ChatAnswer {
  status: number;
  raw: string;
  chunks: Record<string, unknown>[];
  done: boolean;
  text: string;
  error?: { message: string; type: string; code: string };
}

export async function postChat(
  url: string,
  key: string | undefined,
  body: unknown,
  signal?: AbortSignal,
): Promise<ChatAnswer> {
  const response = await fetch(`${url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(key ? { authorization: `Bearer ${key}` } : {}) },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
  const raw = await response.text();
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const parsed = JSON.parse(raw) as { error: ChatAnswer["error"] };
    return {
      status: response.status,
      raw,
      chunks: [],
      done: false,
      text: "",
      ...(parsed.error ? { error: parsed.error } : {}),
    };
  }
  const payloads = parseSseData(raw);
  const chunks = payloads
    .filter((payload) => payload !== "[DONE]")
    .map((payload) => JSON.parse(payload) as Record<string, unknown>);
  const text = chunks
    .map(
      (chunk) => (chunk.choices as { delta?: { content?: string } }[] | undefined)?.[0]?.delta?.content ?? "",
    )
    .join("");
  const error = chunks.find((chunk) => chunk.error)?.error as ChatAnswer["error"] | undefined;
  return {
    status: response.status,
    raw,
    chunks,
    done: payloads.at(-1) === "[DONE]",
    text,
    ...(error ? { error } : {}),
  };
}
