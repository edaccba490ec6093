import { describeToolUse } from "./describe-tool-use";
import { BaseOutputTracker, clip, isObject, type Json } from "./output-tracker";

function firstText(source: Json, ...names: string[]): string | undefined {
  for (const name of names) {
    const value = source[name];
    if (typeof value === "string" && value.trim() !== "") return value;
  }
  return undefined;
}

/**
 * Follows agents other than Claude Code. A line that parses as a JSON object is read loosely for
 * the fields the common CLIs use (Codex `exec --json`: `thread.started`, `item.completed` with an
 * `agent_message` or `command_execution`, `turn.completed`, `turn.failed`; Gemini and Cursor
 * `stream-json`: `init`, `message`, `tool_use`, `result`); any other line is plain text and
 * becomes the last thing the agent said.
 */
export class JsonLinesTracker extends BaseOutputTracker {
  line(line: string): unknown {
    const trimmed = line.trim();
    if (trimmed === "") return undefined;
    this.lastOutputAt = Date.now();
    if (trimmed.startsWith("{")) {
      try {
        const event: unknown = JSON.parse(trimmed);
        if (isObject(event)) {
          this.recorded.events += 1;
          this.#event(event);
          return event;
        }
      } catch {
        // Not JSON after all: treat it as text.
      }
    }
    this.said(trimmed);
    return undefined;
  }

  #event(event: Json): void {
    const progress = this.recorded;
    const type = typeof event["type"] === "string" ? event["type"] : "";
    const sessionId = firstText(event, "session_id", "thread_id", "sessionId");
    if (sessionId && !progress.sessionId) progress.sessionId = sessionId;
    if (type === "turn.started" || (type === "message" && event["role"] === "assistant" && !event["delta"])) {
      progress.turns += 1;
    }
    const item = isObject(event["item"]) ? event["item"] : undefined;
    if (item && type === "item.completed") this.#item(item);
    if (type === "tool_use" || type === "tool_call") {
      const name = firstText(event, "tool_name", "name") ?? "tool";
      this.#toolUse(name, event["parameters"] ?? event["input"] ?? event["args"]);
    }
    if (type === "message" || type === "assistant" || type === "agent_message") {
      const said = firstText(event, "content", "text", "message");
      if (said && event["role"] !== "user") this.said(said);
    }
    if (type === "error") {
      // Codex reports reconnects and retries this way; the turn itself fails with turn.failed.
      progress.apiRetries += 1;
      const message = firstText(event, "message");
      progress.lastApiRetry = { error: message === undefined ? undefined : clip(message) };
    }
    if (type === "turn.failed") {
      const error = isObject(event["error"]) ? event["error"] : event;
      const message = firstText(error, "message", "error") ?? "The agent reported an error.";
      this.finalResult = { subtype: "error", isError: true, text: clip(message), permissionDenials: 0 };
    }
    if (type === "turn.completed" && !this.finalResult?.isError) {
      this.finalResult = {
        subtype: "success",
        isError: false,
        text: progress.lastAssistantText,
        permissionDenials: 0,
      };
    }
    if (type === "result") {
      const failed = event["is_error"] === true || event["status"] === "error" || isObject(event["error"]);
      const error = isObject(event["error"]) ? event["error"] : undefined;
      const text = (error && firstText(error, "message")) ?? firstText(event, "result", "response", "text");
      this.finalResult = {
        subtype: firstText(event, "subtype", "status") ?? (failed ? "error" : "success"),
        isError: failed,
        text: text === undefined ? undefined : clip(text),
        sessionId: firstText(event, "session_id"),
        permissionDenials: 0,
      };
    }
    const usage = isObject(event["usage"]) ? event["usage"] : undefined;
    const cost = event["total_cost_usd"] ?? usage?.["cost_usd"];
    if (typeof cost === "number" && Number.isFinite(cost)) progress.costUsd = cost;
  }

  #item(item: Json): void {
    const kind = item["type"];
    if (kind === "agent_message" || kind === "assistant_message") {
      const said = firstText(item, "text", "message");
      if (said) this.said(said);
    } else if (kind === "command_execution") {
      this.#toolUse("Bash", { command: item["command"] });
      if (typeof item["exit_code"] === "number" && item["exit_code"] !== 0) this.recorded.toolErrors += 1;
    } else if (kind === "file_change") {
      const changes = Array.isArray(item["changes"]) ? item["changes"] : [];
      const first = changes.find(isObject);
      this.#toolUse("Edit", first ? { path: first["path"] } : {});
    } else if (kind === "mcp_tool_call") {
      this.#toolUse(firstText(item, "tool") ?? "mcp", item["arguments"]);
    }
  }

  #toolUse(name: string, input: unknown): void {
    const progress = this.recorded;
    progress.toolUses += 1;
    progress.toolUseCounts[name] = (progress.toolUseCounts[name] ?? 0) + 1;
    progress.lastAction = describeToolUse(name, input);
  }
}
