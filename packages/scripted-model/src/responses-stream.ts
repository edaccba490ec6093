import { chunksOf, type StreamEvent } from "./messages-stream";
import type { ScriptedTextTurn, ScriptedToolUseTurn } from "./scripted-turn";

/** Identifiers and figures for one OpenAI Responses API answer. */
export interface ResponsesAnswerOptions {
  responseId: string;
  itemId: string;
  callId: string;
  model: string;
  inputTokens: number;
}

type OutputItem = Record<string, unknown>;

/** The output items for a turn: a message with output_text, then a function_call for a tool use. */
export function responseItemsOf(
  turn: ScriptedTextTurn | ScriptedToolUseTurn,
  options: ResponsesAnswerOptions,
): OutputItem[] {
  const items: OutputItem[] = [];
  const said = turn.type === "text" ? turn.text : turn.text;
  if (said) {
    items.push({
      id: `${options.itemId}_message`,
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: said, annotations: [] }],
    });
  }
  if (turn.type === "tool_use") {
    items.push({
      id: `${options.itemId}_call`,
      type: "function_call",
      status: "completed",
      call_id: options.callId,
      name: turn.name,
      arguments: JSON.stringify(turn.input),
    });
  }
  return items;
}

function usageOf(items: OutputItem[], inputTokens: number) {
  const output = Math.max(1, Math.ceil(JSON.stringify(items).length / 4));
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + output,
  };
}

/**
 * The SSE sequence of the OpenAI Responses API for one turn: response.created, per item
 * output_item.added, text or function-argument deltas, output_item.done, then response.completed.
 */
export function responsesEventsOf(
  turn: ScriptedTextTurn | ScriptedToolUseTurn,
  options: ResponsesAnswerOptions,
  chunkSize = 24,
): StreamEvent[] {
  const items = responseItemsOf(turn, options);
  const base = {
    id: options.responseId,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    model: options.model,
  };
  const events: StreamEvent[] = [
    {
      event: "response.created",
      data: { type: "response.created", response: { ...base, status: "in_progress", output: [] } },
    },
  ];
  items.forEach((item, outputIndex) => {
    const opening =
      item["type"] === "message"
        ? { ...item, status: "in_progress", content: [] }
        : { ...item, status: "in_progress", arguments: "" };
    events.push({
      event: "response.output_item.added",
      data: { type: "response.output_item.added", output_index: outputIndex, item: opening },
    });
    if (item["type"] === "message") {
      const text = ((item["content"] as { text: string }[])[0] ?? { text: "" }).text;
      for (const delta of chunksOf(text, chunkSize)) {
        events.push({
          event: "response.output_text.delta",
          data: {
            type: "response.output_text.delta",
            item_id: item["id"],
            output_index: outputIndex,
            content_index: 0,
            delta,
          },
        });
      }
    } else {
      for (const delta of chunksOf(String(item["arguments"]), chunkSize)) {
        events.push({
          event: "response.function_call_arguments.delta",
          data: {
            type: "response.function_call_arguments.delta",
            item_id: item["id"],
            output_index: outputIndex,
            delta,
          },
        });
      }
    }
    events.push({
      event: "response.output_item.done",
      data: { type: "response.output_item.done", output_index: outputIndex, item },
    });
  });
  events.push({
    event: "response.completed",
    data: {
      type: "response.completed",
      response: { ...base, status: "completed", output: items, usage: usageOf(items, options.inputTokens) },
    },
  });
  return events;
}

/** The non-streaming Responses API body for the same turn. */
export function responseBodyOf(
  turn: ScriptedTextTurn | ScriptedToolUseTurn,
  options: ResponsesAnswerOptions,
) {
  const items = responseItemsOf(turn, options);
  return {
    id: options.responseId,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    model: options.model,
    status: "completed",
    output: items,
    usage: usageOf(items, options.inputTokens),
  };
}
