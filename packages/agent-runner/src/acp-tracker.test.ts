import { describe, expect, it } from "vitest";
import { AcpTracker } from "./acp-tracker";

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
