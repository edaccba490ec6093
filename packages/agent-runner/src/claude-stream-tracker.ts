import { describeToolUse } from "./describe-tool-use";
import { BaseOutputTracker, clip, isObject, type Json } from "./output-tracker";

const maximumDenials = 50;

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

function finite(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

/**
 * Follows Claude Code's `--output-format stream-json --verbose` output. Reads fields by name
 * (key order is not fixed), ignores event types it does not know, and keeps only summaries,
 * so memory stays small however long the session runs.
 */
export class ClaudeStreamTracker extends BaseOutputTracker {
  #lastMessageId: string | undefined;

  line(line: string): unknown {
    if (line.trim() === "") return undefined;
    let event: unknown;
    try {
      event = JSON.parse(line);
    } catch {
      this.recorded.invalidLines += 1;
      return undefined;
    }
    if (!isObject(event)) {
      this.recorded.invalidLines += 1;
      return undefined;
    }
    this.recorded.events += 1;
    this.lastOutputAt = Date.now();
    this.event(event);
    return event;
  }

  /** Applies one parsed stream-json event. */
  event(event: Json): void {
    const progress = this.recorded;
    const sessionId = text(event["session_id"]);
    if (sessionId && !progress.sessionId) progress.sessionId = sessionId;
    switch (event["type"]) {
      case "system":
        this.#system(event);
        break;
      case "assistant":
        this.#assistant(event);
        break;
      case "user":
        this.#user(event);
        break;
      case "result":
        this.#resultEvent(event);
        break;
      default:
        break;
    }
  }

  #system(event: Json): void {
    const progress = this.recorded;
    const subtype = event["subtype"];
    if (subtype === "init") {
      progress.sessionId = text(event["session_id"]) ?? progress.sessionId;
      progress.model = text(event["model"]) ?? progress.model;
    } else if (subtype === "api_retry") {
      progress.apiRetries += 1;
      progress.lastApiRetry = {
        attempt: finite(event["attempt"]),
        maxRetries: finite(event["max_retries"]),
        retryDelayMs: finite(event["retry_delay_ms"]),
        errorStatus: finite(event["error_status"]),
        error: text(event["error"]),
      };
    } else if (subtype === "status" && event["status"] === "compacting") {
      progress.compactions += 1;
    }
  }

  #assistant(event: Json): void {
    const progress = this.recorded;
    const error = text(event["error"]);
    if (error) progress.assistantError = error;
    const message = isObject(event["message"]) ? event["message"] : undefined;
    if (!message) return;
    const id = text(message["id"]);
    // One API message may arrive as several events sharing its id: count it once.
    if (id === undefined || id !== this.#lastMessageId) {
      if (!error && message["model"] !== "<synthetic>") progress.turns += 1;
      this.#lastMessageId = id;
    }
    const content = Array.isArray(message["content"]) ? message["content"] : [];
    for (const block of content) {
      if (!isObject(block)) continue;
      if (block["type"] === "text") {
        const said = text(block["text"]);
        if (said?.trim()) this.said(said);
      } else if (block["type"] === "tool_use") {
        const name = text(block["name"]) ?? "tool";
        progress.toolUses += 1;
        progress.toolUseCounts[name] = (progress.toolUseCounts[name] ?? 0) + 1;
        progress.lastAction = describeToolUse(name, block["input"]);
      }
    }
  }

  #user(event: Json): void {
    const message = isObject(event["message"]) ? event["message"] : undefined;
    const content = message && Array.isArray(message["content"]) ? message["content"] : [];
    for (const block of content) {
      if (isObject(block) && block["type"] === "tool_result" && block["is_error"] === true) {
        this.recorded.toolErrors += 1;
      }
    }
  }

  #resultEvent(event: Json): void {
    const progress = this.recorded;
    const denials = Array.isArray(event["permission_denials"]) ? event["permission_denials"] : [];
    progress.permissionDenials = denials
      .filter(isObject)
      .slice(0, maximumDenials)
      .map((denial) => {
        const toolName = text(denial["tool_name"]) ?? "tool";
        return {
          toolName,
          toolUseId: text(denial["tool_use_id"]),
          action: describeToolUse(toolName, denial["tool_input"]),
        };
      });
    const numTurns = finite(event["num_turns"]);
    if (numTurns !== undefined) progress.turns = numTurns;
    const costUsd = finite(event["total_cost_usd"]);
    if (costUsd !== undefined) progress.costUsd = costUsd;
    const resultText = text(event["result"]);
    if (resultText !== undefined) this.noteGstackResult(resultText);
    this.finalResult = {
      subtype: text(event["subtype"]) ?? "unknown",
      isError: event["is_error"] === true,
      apiErrorStatus: finite(event["api_error_status"]),
      apiErrorType: text(event["api_error_type"]),
      terminalReason: text(event["terminal_reason"]),
      stopReason: text(event["stop_reason"]),
      text: resultText === undefined ? undefined : clip(resultText),
      numTurns,
      durationMs: finite(event["duration_ms"]),
      costUsd,
      sessionId: text(event["session_id"]),
      permissionDenials: denials.length,
    };
  }
}
