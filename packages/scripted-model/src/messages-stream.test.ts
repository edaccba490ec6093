import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chunksOf, encodeStreamEvent, streamEventsOf } from "./messages-stream";

const options = { messageId: "msg_1", toolUseId: "toolu_1", model: "scripted", inputTokens: 10 };

function reassemble(events: ReturnType<typeof streamEventsOf>) {
  const blocks: Record<number, { type: string; text: string; json: string; name?: string }> = {};
  for (const { data } of events) {
    if (data["type"] === "content_block_start") {
      const block = data["content_block"] as { type: string; name?: string };
      blocks[data["index"] as number] = { type: block.type, text: "", json: "", name: block.name };
    }
    if (data["type"] === "content_block_delta") {
      const delta = data["delta"] as { type: string; text?: string; partial_json?: string };
      const target = blocks[data["index"] as number]!;
      if (delta.type === "text_delta") target.text += delta.text;
      else target.json += delta.partial_json;
    }
  }
  return Object.values(blocks);
}

describe("streamEventsOf", () => {
  it("frames a text answer in the Messages API order and ends the turn", () => {
    const events = streamEventsOf({ type: "text", text: "hello" }, options);
    expect(events.map((event) => event.event)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect((events[4]!.data["delta"] as { stop_reason: string }).stop_reason).toBe("end_turn");
  });

  it("streams a tool call as input_json_delta pieces that rebuild the input exactly", () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.string(),
        fc.integer({ min: 1, max: 40 }),
        (input, text, size) => {
          const events = streamEventsOf({ type: "tool_use", name: "Write", input, text }, options, size);
          const blocks = reassemble(events);
          const tool = blocks.find((block) => block.type === "tool_use")!;
          expect(tool.name).toBe("Write");
          expect(JSON.parse(tool.json)).toEqual(JSON.parse(JSON.stringify(input)));
          if (text) expect(blocks[0]!.text).toBe(text);
          const stop = events.find((event) => event.event === "message_delta")!;
          expect((stop.data["delta"] as { stop_reason: string }).stop_reason).toBe("tool_use");
        },
      ),
    );
  });

  it("encodes each event as one SSE record", () => {
    expect(encodeStreamEvent({ event: "message_stop", data: { type: "message_stop" } })).toBe(
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    );
  });
});

describe("chunksOf", () => {
  it("splits into bounded pieces that join back to the input", () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: 1, max: 50 }), (value, size) => {
        const pieces = chunksOf(value, size);
        expect(pieces.join("")).toBe(value);
        for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(size);
      }),
    );
  });
});
