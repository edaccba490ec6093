/** The parts of a Messages API request body this package reads. */
export interface MessagesRequestBody {
  model?: string;
  stream?: boolean;
  system?: unknown;
  messages?: unknown;
  tools?: unknown;
  /** OpenAI Responses API: system instructions and the input items. */
  instructions?: unknown;
  input?: unknown;
  max_tokens?: number;
  [key: string]: unknown;
}

/** Every piece of text in a content value (string, block list, nested tool results). */
export function textOfContent(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map(textOfContent).filter(Boolean).join("\n");
  if (content !== null && typeof content === "object") {
    const block = content as Record<string, unknown>;
    if (typeof block["text"] === "string") return block["text"];
    if (typeof block["output"] === "string") return block["output"];
    if (block["content"] !== undefined) return textOfContent(block["content"]);
  }
  return "";
}

/** All the text the model would see: system prompt plus every message, in order. */
export function promptTextOf(body: MessagesRequestBody): string {
  const parts: string[] = [textOfContent(body.system), textOfContent(body.instructions)];
  for (const message of conversationOf(body)) {
    const item = message as { content?: unknown };
    parts.push(textOfContent(item?.content ?? message));
  }
  return parts.filter(Boolean).join("\n");
}

/** The text of the first user message: the task prompt a CLI was started with. */
export function firstUserTextOf(body: MessagesRequestBody): string {
  const first = conversationOf(body).find((message) => (message as { role?: string })?.role === "user");
  return first ? textOfContent((first as { content?: unknown }).content) : "";
}

/** How many tool results the conversation already holds: a measure of how far the agent got. */
export function toolResultCountOf(body: MessagesRequestBody): number {
  let count = 0;
  for (const message of conversationOf(body)) {
    if ((message as { type?: string })?.type === "function_call_output") count += 1;
    const content = (message as { content?: unknown })?.content;
    if (!Array.isArray(content)) continue;
    for (const block of content) if ((block as { type?: string })?.type === "tool_result") count += 1;
  }
  return count;
}

/** The conversation items: Messages API `messages`, or Responses API `input` (a string or items). */
function conversationOf(body: MessagesRequestBody): unknown[] {
  if (Array.isArray(body.messages)) return body.messages;
  if (typeof body.input === "string") return [{ role: "user", content: body.input }];
  if (Array.isArray(body.input)) return body.input;
  return [];
}
