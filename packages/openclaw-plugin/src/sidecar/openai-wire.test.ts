import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  chunkWriter,
  newestUserText,
  parseChatRequest,
  parseSseData,
  SSE_DONE,
  sseData,
} from "./openai-wire";

describe("the Chat Completions wire", () => {
  it("streams chunks that read back exactly, whatever the text (newlines, 'data:', unicode)", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "grapheme", maxLength: 40 }), { maxLength: 8 }), (texts) => {
        const chunks = chunkWriter("chatcmpl-1", "claude-code", 1);
        const sent = [chunks.role(), ...texts.map((text) => chunks.text(text)), chunks.finish("stop")];
        const stream = sent.map(sseData).join("") + SSE_DONE;
        const payloads = parseSseData(stream);
        expect(payloads.at(-1)).toBe("[DONE]");
        expect(payloads.slice(0, -1).map((payload) => JSON.parse(payload))).toEqual(sent);
      }),
    );
  });

  it("takes only what the person said since the assistant last answered", () => {
    const messages = [
      { role: "system", content: "long system prompt" },
      { role: "user", content: "first" },
      { role: "assistant", content: "answer" },
      { role: "user", content: "second" },
      { role: "user", content: [{ type: "text", text: "third" }, { type: "image_url" }] },
    ];
    expect(newestUserText(messages)).toBe("second\n\nthird");
  });

  it("names the field and the rule of a request it refuses", () => {
    const bad = parseChatRequest(JSON.stringify({ model: "claude-code", messages: "hello" }));
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.message).toMatch(/^Field messages: /);
    const notJson = parseChatRequest("{");
    expect(!notJson.ok && notJson.error.code).toBe("invalid_json");
    const good = parseChatRequest(
      JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true, tools: [] }),
    );
    expect(good.ok).toBe(true);
  });
});
