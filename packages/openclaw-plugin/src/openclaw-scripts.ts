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

/** Every text of every message of the request, oldest first (what the agent has read). */
function conversationText(request: RecordedRequest): string {
  const messages = (request.body as { messages?: MessageLike[] } | undefined)?.messages ?? [];
  return messages.map((message) => textOf(message.content)).join("\n");
}

/** The last match of `pattern` (global) in `text`. */
function lastMatch(text: string, pattern: RegExp): RegExpExecArray | undefined {
  let found: RegExpExecArray | undefined;
  for (const match of text.matchAll(pattern)) found = match as RegExpExecArray;
  return found;
}

/**
 * An agent that turns the person's plain replies into tool calls with nothing but what the
 * session's gstack messages told it: "approve" becomes the `gstack_answer` call the newest
 * plan's message spells out, "land it" the `gstack_land` call the newest report's message
 * spells out. Anything else is `undefined` (left to another responder).
 */
export function plainReplyResponder(request: RecordedRequest): ScriptedStep | undefined {
  const last = lastMessage(request);
  const isToolResult =
    Array.isArray(last?.content) &&
    (last.content as { type?: string }[]).some((block) => block.type === "tool_result");
  if (isToolResult) return undefined;
  // The person's newest message alone, without the envelope OpenClaw may put before it.
  const messages = (request.body as { messages?: MessageLike[] } | undefined)?.messages ?? [];
  const own = [...messages]
    .reverse()
    .map((message) => (message.role === "user" ? textOf(message.content) : undefined))
    .find(
      (text) => text !== undefined && !text.trimStart().startsWith("<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"),
    );
  const said = ((own ?? "").trim().split("\n").at(-1) ?? "")
    .replace(/^\[[^\]]*\]\s*/, "")
    .trim()
    .toLowerCase();
  const seen = conversationText(request);
  if (said === "approve" || said === "yes, go ahead") {
    const call = lastMatch(
      seen,
      /approve: gstack_answer with dispatch_id ([^\s,]+), answer approve, round (\d+)/g,
    );
    if (!call) return scripted.text("I see no plan waiting for an answer.");
    return scripted.toolUse("tool_call", {
      id: "gstack_answer",
      args: { dispatch_id: call[1], answer: "approve", round: Number(call[2]) },
    });
  }
  if (said === "land it" || said === "land") {
    const call = lastMatch(
      seen,
      /"land" or "land it" is gstack_land with dispatch_id (\S+) and action land/g,
    );
    if (!call) return scripted.text("I see no work waiting to land.");
    return scripted.toolUse("tool_call", {
      id: "gstack_land",
      args: { dispatch_id: call[1], action: "land" },
    });
  }
  return undefined;
}
