import type { PermissionDenial, TokenUsage } from "./agent-progress";
import { describeToolUse } from "./describe-tool-use";
import { BaseOutputTracker, clip, isObject, type Json } from "./output-tracker";

/** A permission request the runner refused, with the rule that refused it. */
export interface AcpRefusal {
  toolCallId?: string;
  /** What was asked, e.g. `Bash: curl https://example.com`. */
  action: string;
  reason: string;
}

/** JSON-RPC error code ACP uses for "authentication required". */
const authRequiredCode = -32000;

function text(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

/**
 * Follows an Agent Client Protocol agent from the JSON-RPC messages it writes on stdout (one per
 * line): `session/update` notifications (message chunks, tool calls and their updates, plans,
 * usage), the session id of `session/new`, and the `session/prompt` answer (its `stopReason`) or
 * an error answer, which becomes the final result. It reads the same lines whether they arrive
 * live or from the kept output copy, so a run that ended while nobody followed it is judged the
 * same way. Refusals of permission requests are added by the runner (`refused`), since only the
 * runner's answers say what it refused; they close the final text so the report names them.
 */
export class AcpTracker extends BaseOutputTracker {
  /** The current agent message, built from its chunks; a tool call starts a new one. */
  #message = "";
  #messageDone = true;
  #toolTitles = new Map<string, string>();
  #toolKinds = new Map<string, string>();
  readonly #refusals: AcpRefusal[] = [];
  #stopReason: string | undefined;
  #error: { code?: number; message: string } | undefined;

  line(line: string): unknown {
    const trimmed = line.trim();
    if (trimmed === "") return undefined;
    this.lastOutputAt = Date.now();
    let message: unknown;
    try {
      message = JSON.parse(trimmed);
    } catch {
      this.recorded.invalidLines += 1;
      return undefined;
    }
    if (!isObject(message)) {
      this.recorded.invalidLines += 1;
      return undefined;
    }
    this.recorded.events += 1;
    this.#message_(message);
    return message;
  }

  #message_(message: Json): void {
    if (message["method"] === "session/update" && isObject(message["params"])) {
      const params = message["params"];
      const sessionId = text(params["sessionId"]);
      if (sessionId && !this.recorded.sessionId) this.recorded.sessionId = sessionId;
      if (isObject(params["update"])) this.#update(params["update"]);
      return;
    }
    if (message["method"] !== undefined) return;
    // A response: the agent's answers to initialize, session/new, session/prompt, …
    if (isObject(message["error"])) {
      const error = message["error"];
      const data = isObject(error["data"]) ? error["data"] : undefined;
      const detail = [text(error["message"]), text(data?.["details"]), text(error["data"])]
        .filter(Boolean)
        .join(": ");
      this.#error = {
        ...(typeof error["code"] === "number" ? { code: error["code"] } : {}),
        message: detail || "The agent answered with an error.",
      };
      this.#finish();
      return;
    }
    const result = isObject(message["result"]) ? message["result"] : undefined;
    if (result === undefined) return;
    const sessionId = text(result["sessionId"]);
    if (sessionId) this.recorded.sessionId = sessionId;
    const stopReason = text(result["stopReason"]);
    if (stopReason) {
      const usage = tokenUsage(result["usage"]);
      if (usage) this.recorded.usage = usage;
      this.#stopReason = stopReason;
      this.#finish();
    }
  }

  #update(update: Json): void {
    const progress = this.recorded;
    switch (update["sessionUpdate"]) {
      case "agent_message_chunk": {
        const content = isObject(update["content"]) ? update["content"] : undefined;
        const said =
          content?.["type"] === "text" && typeof content["text"] === "string" ? content["text"] : "";
        if (this.#messageDone) {
          this.#message = "";
          this.#messageDone = false;
          progress.turns += 1;
        }
        this.#message = clip(this.#message + said);
        if (this.#message.trim() !== "") this.said(this.#message);
        return;
      }
      case "tool_call": {
        this.#messageDone = true;
        const id = text(update["toolCallId"]) ?? "";
        const title = this.#describe(update);
        const known = this.#toolTitles.has(id);
        this.#toolTitles.set(id, title);
        const name = text(update["kind"]) ?? "other";
        this.#toolKinds.set(id, name);
        progress.lastAction = title;
        // An agent may announce a call again once its input is complete: it is one call.
        if (known) return;
        progress.toolUses += 1;
        progress.toolUseCounts[name] = (progress.toolUseCounts[name] ?? 0) + 1;
        if (update["status"] === "failed") progress.toolErrors += 1;
        return;
      }
      case "tool_call_update": {
        const id = text(update["toolCallId"]) ?? "";
        const kind = text(update["kind"]);
        if (kind) this.#toolKinds.set(id, kind);
        if (text(update["title"]) !== undefined || update["rawInput"] !== undefined) {
          const title = this.#describe(update);
          this.#toolTitles.set(id, title);
          progress.lastAction = title;
        }
        if (update["status"] === "failed") progress.toolErrors += 1;
        return;
      }
      case "plan": {
        const entries = Array.isArray(update["entries"]) ? update["entries"].filter(isObject) : [];
        const current =
          entries.find((entry) => entry["status"] === "in_progress") ??
          entries.find((entry) => entry["status"] === "pending");
        const done = entries.filter((entry) => entry["status"] === "completed").length;
        progress.lastAction = clip(
          `Plan ${done}/${entries.length}${current && text(current["content"]) ? `: ${current["content"]}` : ""}`,
        );
        return;
      }
      case "usage_update": {
        const cost = isObject(update["cost"]) ? update["cost"] : undefined;
        if (cost && typeof cost["amount"] === "number" && cost["currency"] === "USD") {
          progress.costUsd = cost["amount"];
        }
        return;
      }
      default:
        return;
    }
  }

  /** A one-line description of a tool call: its command or path where its input has one, else its title. */
  #describe(call: Json): string {
    const title = text(call["title"]);
    const input = call["rawInput"];
    const name = title ?? text(call["kind"]) ?? "tool";
    if (isObject(input) && (typeof input["command"] === "string" || typeof input["cmd"] === "string")) {
      return describeToolUse("Bash", input);
    }
    return describeToolUse(name, undefined);
  }

  /**
   * The prompt turn starts: what came before (the history a loaded session replays) is not this
   * run's work, so the counts start again; the session id is the one the turn runs in.
   */
  startTurn(sessionId: string): void {
    const progress = this.recorded;
    progress.sessionId = sessionId;
    progress.turns = 0;
    progress.toolUses = 0;
    progress.toolUseCounts = {};
    progress.toolErrors = 0;
    delete progress.lastAssistantText;
    delete progress.lastAction;
    delete progress.gstackResultLine;
    this.#message = "";
    this.#messageDone = true;
    this.#stopReason = undefined;
    this.#error = undefined;
    this.finalResult = undefined;
  }

  /** The kind (`edit`, `execute`, `read`, …) a tool call was announced with, when it was seen. */
  toolKind(toolCallId: string): string | undefined {
    return this.#toolKinds.get(toolCallId);
  }

  /** Records a permission request the runner refused. */
  refused(refusal: AcpRefusal): void {
    this.#refusals.push(refusal);
    const denial: PermissionDenial = {
      toolName: refusal.action.split(/[: ]/)[0] || "tool",
      action: clip(`${refusal.action} (refused: ${refusal.reason})`),
      ...(refusal.toolCallId ? { toolUseId: refusal.toolCallId } : {}),
    };
    this.recorded.permissionDenials.push(denial);
    this.#finish();
  }

  /** The refusals so far. */
  refusals(): readonly AcpRefusal[] {
    return this.#refusals;
  }

  /** Whether the prompt turn has ended (an answer or an error). */
  ended(): boolean {
    return this.#stopReason !== undefined || this.#error !== undefined;
  }

  /** Rebuilds the final result from what is known, once the prompt turn has ended. */
  #finish(): void {
    if (this.#stopReason === undefined && this.#error === undefined) return;
    const refusals =
      this.#refusals.length === 0
        ? ""
        : `\n\nRefused by the dispatch's permission policy:\n${this.#refusals
            .map((refusal) => `- ${refusal.action}: ${refusal.reason}`)
            .join("\n")}`;
    const said = this.recorded.lastAssistantText ?? "";
    if (this.#error) {
      const authentication = this.#error.code === authRequiredCode;
      this.finalResult = {
        subtype: "error",
        isError: true,
        ...(authentication ? { apiErrorType: "authentication_error" } : {}),
        text: clip(`${this.#error.message}${refusals}`),
        ...(this.recorded.sessionId ? { sessionId: this.recorded.sessionId } : {}),
        ...(this.recorded.costUsd !== undefined ? { costUsd: this.recorded.costUsd } : {}),
        ...(this.recorded.usage ? { usage: { ...this.recorded.usage } } : {}),
        numTurns: this.recorded.turns,
        permissionDenials: this.#refusals.length,
      };
      return;
    }
    const stopReason = this.#stopReason!;
    const subtype =
      stopReason === "end_turn"
        ? "success"
        : stopReason === "max_turn_requests"
          ? "error_max_turns"
          : `error_${stopReason}`;
    this.finalResult = {
      subtype,
      isError: stopReason !== "end_turn",
      stopReason,
      ...(said || refusals ? { text: clip(`${said}${refusals}`) } : {}),
      ...(this.recorded.sessionId ? { sessionId: this.recorded.sessionId } : {}),
      ...(this.recorded.costUsd !== undefined ? { costUsd: this.recorded.costUsd } : {}),
      ...(this.recorded.usage ? { usage: { ...this.recorded.usage } } : {}),
      numTurns: this.recorded.turns,
      permissionDenials: this.#refusals.length,
    };
  }
}

const tokenCount = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) && value >= 0 ? value : undefined;

/**
 * The protocol's `usage` of a prompt answer (`inputTokens`, `outputTokens` and `totalTokens`
 * required, the cached and thought counts optional), or undefined when it is missing or any
 * count is not a whole number of tokens, so that nothing half-read is reported.
 */
export function tokenUsage(value: unknown): TokenUsage | undefined {
  if (!isObject(value)) return undefined;
  const inputTokens = tokenCount(value["inputTokens"]);
  const outputTokens = tokenCount(value["outputTokens"]);
  const totalTokens = tokenCount(value["totalTokens"]);
  if (inputTokens === undefined || outputTokens === undefined || totalTokens === undefined) return undefined;
  const usage: TokenUsage = { inputTokens, outputTokens, totalTokens };
  for (const key of ["cachedReadTokens", "cachedWriteTokens", "thoughtTokens"] as const) {
    const raw = value[key];
    if (raw === undefined || raw === null) continue;
    const count = tokenCount(raw);
    if (count === undefined) return undefined;
    usage[key] = count;
  }
  return usage;
}
