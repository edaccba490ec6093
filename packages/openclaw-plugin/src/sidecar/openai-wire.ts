import { z } from "zod";

/** An OpenAI-shaped error body and the HTTP status it goes with. */
export interface OpenAiError {
  status: number;
  type: string;
  code: string;
  message: string;
}

export function openAiError(status: number, type: string, code: string, message: string): OpenAiError {
  return { status, type, code, message };
}

/** The JSON body of an error answer: `{"error": {message, type, code, param}}`. */
export function errorBody(error: OpenAiError): {
  error: { message: string; type: string; code: string; param: null };
} {
  return { error: { message: error.message, type: error.type, code: error.code, param: null } };
}

const contentPart = z.looseObject({ type: z.string(), text: z.string().optional() });

const message = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
});

/** The fields of a Chat Completions request the sidecar reads; the rest (tools, store, …) is allowed and ignored. */
export const chatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  stream: z.boolean().optional(),
  user: z.string().optional(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;
export type ChatMessage = z.infer<typeof message>;

/** Parses a request body; an OpenAI-shaped 400 naming the field and the rule when it does not fit. */
export function parseChatRequest(
  raw: string,
): { ok: true; request: ChatRequest } | { ok: false; error: OpenAiError } {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (error) {
    return {
      ok: false,
      error: openAiError(
        400,
        "invalid_request_error",
        "invalid_json",
        `The body is not JSON: ${(error as Error).message}.`,
      ),
    };
  }
  const parsed = chatRequestSchema.safeParse(json);
  if (parsed.success) return { ok: true, request: parsed.data };
  const issue = parsed.error.issues[0];
  const field = issue?.path.length ? issue.path.join(".") : "body";
  return {
    ok: false,
    error: openAiError(
      400,
      "invalid_request_error",
      "invalid_request",
      `Field ${field}: ${issue?.message ?? "invalid"}.`,
    ),
  };
}

/** The text of one message's content (text parts joined; images and other parts skipped). */
export function textOfMessage(content: ChatMessage["content"]): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((part) => part.type === "text" && typeof part.text === "string")
    .map((part) => part.text)
    .join("\n");
}

/**
 * What the person said since the assistant last answered: the user messages after the last
 * assistant message, joined. OpenClaw resends the whole history and its system prompt on every
 * turn; Claude Code keeps its own context, so only this part is new.
 */
export function newestUserText(messages: readonly ChatMessage[]): string {
  const texts: string[] = [];
  for (let index = messages.length - 1; index >= 0; index--) {
    const entry = messages[index]!;
    if (entry.role === "assistant") break;
    if (entry.role === "user") texts.unshift(textOfMessage(entry.content));
  }
  return texts.filter((text) => text.trim().length > 0).join("\n\n");
}

/** Usage of a turn in Chat Completions terms, with Claude Code's cost added. */
export interface TurnUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details?: { cached_tokens: number };
  /** US dollars, as Claude Code reports it. */
  cost?: number;
}

/** One `chat.completion.chunk`. */
export interface CompletionChunk {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: { index: number; delta: { role?: "assistant"; content?: string }; finish_reason: string | null }[];
  usage?: TurnUsage;
}

/** Builds the chunks of one streamed answer. */
export function chunkWriter(id: string, model: string, created = Math.floor(Date.now() / 1000)) {
  const base = { id, object: "chat.completion.chunk" as const, created, model };
  return {
    role: (): CompletionChunk => ({
      ...base,
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
    }),
    text: (content: string): CompletionChunk => ({
      ...base,
      choices: [{ index: 0, delta: { content }, finish_reason: null }],
    }),
    finish: (reason: string, usage?: TurnUsage): CompletionChunk => ({
      ...base,
      choices: [{ index: 0, delta: {}, finish_reason: reason }],
      ...(usage ? { usage } : {}),
    }),
  };
}

/** One server-sent event carrying JSON (`data: …` and a blank line). */
export function sseData(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

export const SSE_DONE = "data: [DONE]\n\n";

/**
 * Reads the `data:` payloads of a server-sent event stream (comments and other fields skipped,
 * multi-line data joined with a newline). `[DONE]` comes back as the string `"[DONE]"`.
 */
export function parseSseData(stream: string): string[] {
  const payloads: string[] = [];
  for (const event of stream.split(/\r?\n\r?\n/)) {
    const lines = event.split(/\r?\n/).filter((line) => line.startsWith("data:"));
    if (lines.length === 0) continue;
    payloads.push(lines.map((line) => line.slice(5).replace(/^ /, "")).join("\n"));
  }
  return payloads;
}
