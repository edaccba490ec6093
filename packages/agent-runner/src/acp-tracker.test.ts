import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AcpTracker, tokenUsage } from "./acp-tracker";

const update = (body: Record<string, unknown>) =>
  JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: { sessionId: "s-1", update: body } });

describe("AcpTracker", () => {
  it("follows chunks, tool calls, plans and usage, and ends with the prompt's answer", () => {
    const tracker = new AcpTracker();
    const lines = [
      JSON.stringify({ jsonrpc: "2.0", id: 1, result: { sessionId: "s-1" } }),
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Looking" } }),
      update({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Write a.ts", kind: "edit" }),
      update({
        sessionUpdate: "tool_call",
        toolCallId: "t1",
        title: "Write a.ts",
        kind: "edit",
        rawInput: {},
      }),
      update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "failed" }),
      update({
        sessionUpdate: "plan",
        entries: [
          { content: "one", status: "completed", priority: "high" },
          { content: "two", status: "in_progress", priority: "high" },
        ],
      }),
      update({ sessionUpdate: "usage_update", used: 10, size: 100, cost: { amount: 0.25, currency: "USD" } }),
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Done " } }),
      update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "now." } }),
      JSON.stringify({ jsonrpc: "2.0", id: 2, result: { stopReason: "end_turn" } }),
    ];
    for (const line of lines) tracker.line(line);
    expect(tracker.progress()).toMatchObject({
      sessionId: "s-1",
      turns: 2,
      toolUses: 1,
      toolUseCounts: { edit: 1 },
      toolErrors: 1,
      lastAction: "Plan 1/2: two",
      costUsd: 0.25,
      lastAssistantText: "Done now.",
      events: lines.length,
    });
    expect(tracker.result()).toMatchObject({
      subtype: "success",
      isError: false,
      stopReason: "end_turn",
      text: "Done now.",
      costUsd: 0.25,
    });
  });

  it("carries the token usage of the prompt's answer into the progress and the result, with no cost made up", () => {
    const tracker = new AcpTracker();
    const usage = { inputTokens: 1200, outputTokens: 340, totalTokens: 1540, cachedReadTokens: 800 };
    tracker.line(JSON.stringify({ jsonrpc: "2.0", id: 2, result: { stopReason: "end_turn", usage } }));
    expect(tracker.progress().usage).toEqual(usage);
    expect(tracker.result()?.usage).toEqual(usage);
    expect(tracker.progress().costUsd).toBeUndefined();
    expect(tracker.result()).not.toHaveProperty("costUsd");
  });

  it("reports no usage from an answer whose usage is missing or not whole token counts", () => {
    for (const usage of [
      undefined,
      null,
      {},
      { inputTokens: 1, outputTokens: 2 },
      { inputTokens: 1.5, outputTokens: 2, totalTokens: 3.5 },
      { inputTokens: 1, outputTokens: 2, totalTokens: 3, thoughtTokens: -1 },
    ]) {
      const tracker = new AcpTracker();
      tracker.line(JSON.stringify({ jsonrpc: "2.0", id: 2, result: { stopReason: "end_turn", usage } }));
      expect(tracker.progress().usage, JSON.stringify(usage)).toBeUndefined();
      expect(tracker.result(), JSON.stringify(usage)).not.toHaveProperty("usage");
    }
  });

  it("reads back any usage the protocol allows after a JSON round trip, and nothing that is not whole counts", () => {
    const count = fc.nat({ max: Number.MAX_SAFE_INTEGER });
    const usage = fc.record(
      {
        inputTokens: count,
        outputTokens: count,
        totalTokens: count,
        cachedReadTokens: count,
        cachedWriteTokens: count,
        thoughtTokens: count,
      },
      { requiredKeys: ["inputTokens", "outputTokens", "totalTokens"] },
    );
    fc.assert(
      fc.property(usage, (value) => {
        expect(tokenUsage(JSON.parse(JSON.stringify(value)))).toEqual(value);
      }),
    );
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.constantFrom("inputTokens", "outputTokens", "totalTokens", "thoughtTokens"),
          fc.jsonValue(),
        ),
        (value) => {
          const read = tokenUsage(value);
          if (read === undefined) return;
          for (const [key, tokens] of Object.entries(read)) {
            expect(Number.isSafeInteger(tokens) && tokens >= 0, key).toBe(true);
            expect(tokens).toBe(value[key]);
          }
        },
      ),
    );
  });

  it("turns an error answer into an error result; 'authentication required' names its type", () => {
    const tracker = new AcpTracker();
    tracker.line(
      JSON.stringify({ jsonrpc: "2.0", id: 2, error: { code: -32000, message: "Authentication required" } }),
    );
    expect(tracker.result()).toMatchObject({
      isError: true,
      apiErrorType: "authentication_error",
      text: "Authentication required",
    });
  });

  it("adds refusals to the final text with their reasons", () => {
    const tracker = new AcpTracker();
    tracker.refused({ action: "Bash: curl x", reason: "matches Bash(curl:*)" });
    tracker.line(JSON.stringify({ jsonrpc: "2.0", id: 2, result: { stopReason: "end_turn" } }));
    expect(tracker.result()?.text).toContain("- Bash: curl x: matches Bash(curl:*)");
    expect(tracker.progress().permissionDenials).toHaveLength(1);
  });

  it("counts a line that is not JSON as invalid, and a turn start forgets replayed history", () => {
    const tracker = new AcpTracker();
    tracker.line("not json");
    tracker.line(update({ sessionUpdate: "tool_call", toolCallId: "old", title: "Old", kind: "read" }));
    tracker.startTurn("s-2");
    expect(tracker.progress()).toMatchObject({ invalidLines: 1, toolUses: 0, sessionId: "s-2" });
    expect(tracker.result()).toBeUndefined();
  });
});
