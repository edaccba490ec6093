import { describeToolUse } from "@gstack/agent-runner";

function firstLine(text: string): string {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

/**
 * The lines a person reads for one line of an agent's stream: Claude Code's stream-json
 * (`assistant` tool uses and text, the final `result`), Codex's JSON events (`item.completed`) or
 * an ACP agent's JSON-RPC messages (tool calls, plans, the prompt's answer).
 * Other events, and lines that are not JSON, say nothing.
 */
export function describeStreamLine(line: string): string[] {
  let event: Record<string, unknown>;
  try {
    event = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return [];
  }
  if (typeof event !== "object" || event === null) return [];
  if (event.jsonrpc === "2.0") return describeAcpMessage(event);
  if (event.type === "assistant") {
    const content = (event.message as { content?: unknown } | undefined)?.content;
    if (!Array.isArray(content)) return [];
    const lines: string[] = [];
    for (const part of content as Array<Record<string, unknown>>) {
      if (part.type === "tool_use" && typeof part.name === "string")
        lines.push(`▶ ${describeToolUse(part.name, part.input)}`);
      else if (part.type === "text" && typeof part.text === "string" && part.text.trim())
        lines.push(`  ${firstLine(part.text)}`);
    }
    return lines;
  }
  if (event.type === "result") {
    const text = typeof event.result === "string" ? `: ${firstLine(event.result)}` : "";
    return [`■ ${event.is_error === true ? "ended with an error" : "finished"}${text}`];
  }
  if (event.type === "item.completed") {
    const item = event.item as Record<string, unknown> | undefined;
    if (item?.type === "command_execution" && typeof item.command === "string")
      return [`▶ Bash: ${firstLine(item.command)}`];
    if (item?.type === "file_change" && Array.isArray(item.changes)) {
      return (item.changes as Array<{ path?: unknown }>).map(
        (change) => `▶ Edit ${String(change.path ?? "")}`,
      );
    }
    if (item?.type === "agent_message" && typeof item.text === "string") return [`  ${firstLine(item.text)}`];
  }
  return [];
}

/**
 * An ACP agent's message: a tool call once its input is known (agents may announce one first with
 * no input), a plan, the answer that ends the prompt or an error answer. Message chunks are parts
 * of words and say nothing on their own.
 */
function describeAcpMessage(message: Record<string, unknown>): string[] {
  if (message.method === "session/update") {
    const update = (message.params as { update?: Record<string, unknown> } | undefined)?.update;
    if (update?.sessionUpdate === "tool_call") {
      const input = update.rawInput;
      if (input !== null && typeof input === "object" && Object.keys(input).length === 0) return [];
      const title = typeof update.title === "string" ? update.title : String(update.kind ?? "tool");
      const command = (input as { command?: unknown } | undefined)?.command;
      return [`▶ ${typeof command === "string" ? describeToolUse("Bash", input) : firstLine(title)}`];
    }
    if (update?.sessionUpdate === "plan" && Array.isArray(update.entries)) {
      const entries = update.entries as Array<{ content?: unknown; status?: unknown }>;
      const done = entries.filter((entry) => entry.status === "completed").length;
      return [`☰ plan ${done}/${entries.length} done`];
    }
    return [];
  }
  const error = message.error as { message?: unknown } | undefined;
  if (error && typeof error === "object") {
    return [`■ ended with an error: ${firstLine(String(error.message ?? "unknown"))}`];
  }
  const stopReason = (message.result as { stopReason?: unknown } | undefined)?.stopReason;
  if (typeof stopReason === "string") {
    return [stopReason === "end_turn" ? "■ finished" : `■ ended: ${stopReason}`];
  }
  return [];
}
