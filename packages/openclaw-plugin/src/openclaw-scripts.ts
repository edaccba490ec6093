import { type RecordedRequest, type ScriptedStep, scripted } from "@gstack/scripted-model";

/** What the user says to make the scripted OpenClaw agent call the dispatch tool. */
export const DISPATCH_MARKER = "DISPATCH-JSON:";
/** What the user says to make it call any tool: `TOOL-CALL-JSON:{"id": name, "args": {…}}`. */
export const TOOL_MARKER = "TOOL-CALL-JSON:";

interface MessageLike {
  role?: string;
  content?: unknown;
}

function lastMessage(request: RecordedRequest): MessageLike | undefined {
  const messages = (request.body as { messages?: MessageLike[] } | undefined)?.messages ?? [];
  return messages.at(-1);
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((block: { type?: string; text?: string }) => (block.type === "text" ? (block.text ?? "") : ""))
    .join("\n");
}

/**
 * The text of the newest messages since the assistant last spoke (what this turn is about),
 * without the internal context blocks OpenClaw adds as user messages.
 */
export function newestUserText(request: RecordedRequest): string {
  const messages = (request.body as { messages?: MessageLike[] } | undefined)?.messages ?? [];
  const texts: string[] = [];
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message?.role !== "user") break;
    const text = textOf(message.content);
    // OpenClaw's own context blocks (active runs and the like) are not what the turn is about.
    if (!text.trimStart().startsWith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>")) texts.unshift(text);
  }
  return texts.join("\n");
}

/**
 * The scripted OpenClaw agent: a user message carrying `DISPATCH-JSON:{…}` makes it call
 * `gstack_dispatch` with that JSON through OpenClaw's tool search (`tool_call`); a tool
 * result makes it confirm; anything else (a completion report arriving) makes it answer
 * with a short acknowledgement.
 */
export function openclawAgentResponder(request: RecordedRequest): ScriptedStep {
  const last = lastMessage(request);
  const isToolResult =
    Array.isArray(last?.content) &&
    (last.content as { type?: string }[]).some((block) => block.type === "tool_result");
  const fresh = newestUserText(request);
  const marker = fresh.lastIndexOf(DISPATCH_MARKER);
  if (!isToolResult && marker >= 0) {
    const json = fresh.slice(marker + DISPATCH_MARKER.length).split("\n")[0] ?? "{}";
    return scripted.toolUse("tool_call", { id: "gstack_dispatch", args: JSON.parse(json) as unknown });
  }
  const tool = fresh.lastIndexOf(TOOL_MARKER);
  if (!isToolResult && tool >= 0) {
    const json = fresh.slice(tool + TOOL_MARKER.length).split("\n")[0] ?? "{}";
    return scripted.toolUse("tool_call", JSON.parse(json) as Record<string, unknown>);
  }
  if (isToolResult) return scripted.text("Sent to gstack; the report will come back here.");
  return scripted.text("Thanks, I have read the gstack report.");
}
