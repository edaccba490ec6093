import type { ScriptedTextTurn, ScriptedToolUseTurn } from "./scripted-turn";

/** One server-sent event of the Messages API stream. */
export interface StreamEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Content blocks of one assistant answer, as the Messages API returns them. */
export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> };

export interface AnswerOptions {
  messageId: string;
  toolUseId: string;
  model: string;
  inputTokens: number;
}

/** The content blocks and stop reason for a text or tool-use turn. */
export function answerOf(
  turn: ScriptedTextTurn | ScriptedToolUseTurn,
  options: Pick<AnswerOptions, "toolUseId">,
): { content: ContentBlock[]; stopReason: "end_turn" | "tool_use" } {
  if (turn.type === "text") return { content: [{ type: "text", text: turn.text }], stopReason: "end_turn" };
  const content: ContentBlock[] = [];
  if (turn.text) content.push({ type: "text", text: turn.text });
  content.push({ type: "tool_use", id: options.toolUseId, name: turn.name, input: turn.input });
  return { content, stopReason: "tool_use" };
}

/** Splits a string into pieces of at most `size` characters (at least one piece). */
export function chunksOf(value: string, size: number): string[] {
  if (value.length === 0) return [""];
  const pieces: string[] = [];
  for (let start = 0; start < value.length; start += size) pieces.push(value.slice(start, start + size));
  return pieces;
}

function outputTokensOf(content: ContentBlock[]): number {
  const characters = content.reduce(
    (sum, block) => sum + (block.type === "text" ? block.text.length : JSON.stringify(block.input).length),
    0,
  );
  return Math.max(1, Math.ceil(characters / 4));
}

/**
 * The full SSE event sequence for one answer: message_start, per block content_block_start,
 * deltas (text_delta or input_json_delta), content_block_stop, then message_delta and message_stop.
 */
export function streamEventsOf(
  turn: ScriptedTextTurn | ScriptedToolUseTurn,
  options: AnswerOptions,
  chunkSize = 24,
): StreamEvent[] {
  const { content, stopReason } = answerOf(turn, options);
  const events: StreamEvent[] = [
    {
      event: "message_start",
      data: {
        type: "message_start",
        message: {
          id: options.messageId,
          type: "message",
          role: "assistant",
          model: options.model,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: options.inputTokens, output_tokens: 1 },
        },
      },
    },
  ];
  content.forEach((block, index) => {
    if (block.type === "text") {
      events.push({
        event: "content_block_start",
        data: { type: "content_block_start", index, content_block: { type: "text", text: "" } },
      });
      for (const piece of chunksOf(block.text, chunkSize)) {
        events.push({
          event: "content_block_delta",
          data: { type: "content_block_delta", index, delta: { type: "text_delta", text: piece } },
        });
      }
    } else {
      events.push({
        event: "content_block_start",
        data: {
          type: "content_block_start",
          index,
          content_block: { type: "tool_use", id: block.id, name: block.name, input: {} },
        },
      });
      for (const piece of chunksOf(JSON.stringify(block.input), chunkSize)) {
        events.push({
          event: "content_block_delta",
          data: {
            type: "content_block_delta",
            index,
            delta: { type: "input_json_delta", partial_json: piece },
          },
        });
      }
    }
    events.push({ event: "content_block_stop", data: { type: "content_block_stop", index } });
  });
  events.push(
    {
      event: "message_delta",
      data: {
        type: "message_delta",
        delta: { stop_reason: stopReason, stop_sequence: null },
        usage: { output_tokens: outputTokensOf(content) },
      },
    },
    { event: "message_stop", data: { type: "message_stop" } },
  );
  return events;
}

/** The wire form of one event. */
export function encodeStreamEvent(event: StreamEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/** The non-streaming answer body for the same turn. */
export function messageBodyOf(turn: ScriptedTextTurn | ScriptedToolUseTurn, options: AnswerOptions) {
  const { content, stopReason } = answerOf(turn, options);
  return {
    id: options.messageId,
    type: "message",
    role: "assistant",
    model: options.model,
    content,
    stop_reason: stopReason,
    stop_sequence: null,
    usage: { input_tokens: options.inputTokens, output_tokens: outputTokensOf(content) },
  };
}
