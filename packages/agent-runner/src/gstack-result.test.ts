import { formatGstackResultLine, gstackResultStatuses, parseGstackResultLine } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClaudeStreamTracker } from "./claude-stream-tracker";
import { JsonLinesTracker } from "./json-lines-tracker";

function assistantText(id: string, text: string) {
  return JSON.stringify({
    type: "assistant",
    message: { id, role: "assistant", model: "m", content: [{ type: "text", text }] },
  });
}

function toolResult(text: string) {
  return JSON.stringify({
    type: "user",
    message: { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: text }] },
  });
}

const line = fc.record({
  skill: fc.stringMatching(/^[a-z-]{1,20}$/),
  status: fc.constantFrom(...gstackResultStatuses),
  run: fc.stringMatching(/^[A-Za-z0-9._/-]{1,40}$/),
});

describe("gstack's result line in an agent's output", () => {
  it("is the last one Claude Code's agent said, across messages and the final result", () => {
    fc.assert(
      fc.property(line, line, (earlier, last) => {
        const tracker = new ClaudeStreamTracker();
        tracker.line(assistantText("m1", `Phase one.\n${formatGstackResultLine(earlier)}`));
        tracker.line(assistantText("m2", `All done.\n\n${formatGstackResultLine(last)}\n`));
        tracker.line(
          JSON.stringify({ type: "result", subtype: "success", is_error: false, result: "All done." }),
        );
        expect(parseGstackResultLine(tracker.progress().gstackResultLine ?? "")).toEqual(last);
      }),
    );
  });

  it("is read from the final result too, and not from what a tool printed", () => {
    const tracker = new ClaudeStreamTracker();
    tracker.line(toolResult("GSTACK_RESULT: skill=ship status=complete run=tool-output"));
    expect(tracker.progress().gstackResultLine).toBeUndefined();
    tracker.line(
      JSON.stringify({
        type: "result",
        subtype: "success",
        is_error: false,
        result: "Reviewed.\nGSTACK_RESULT: skill=review status=gate_pending run=.gstack/runs/r1",
      }),
    );
    expect(tracker.progress().gstackResultLine).toBe(
      "GSTACK_RESULT: skill=review status=gate_pending run=.gstack/runs/r1",
    );
  });

  it("keeps a last line that does not parse as said, so it can be reported", () => {
    const tracker = new ClaudeStreamTracker();
    tracker.line(assistantText("m1", "GSTACK_RESULT: skill=review status=complete run=r1"));
    tracker.line(assistantText("m2", "GSTACK_RESULT: skill=review status=finished run=r1"));
    const said = tracker.progress().gstackResultLine ?? "";
    expect(said).toBe("GSTACK_RESULT: skill=review status=finished run=r1");
    expect(parseGstackResultLine(said)).toBeUndefined();
  });

  it("is found in plain-text and JSON-lines agents' output", () => {
    const plain = new JsonLinesTracker();
    plain.line("working");
    plain.line("GSTACK_RESULT: skill=qa status=incomplete run=runs/q");
    plain.line("bye");
    expect(plain.progress().gstackResultLine).toBe("GSTACK_RESULT: skill=qa status=incomplete run=runs/q");
    const codex = new JsonLinesTracker();
    codex.line(
      JSON.stringify({
        type: "item.completed",
        item: { type: "agent_message", text: "done\nGSTACK_RESULT: skill=qa status=complete run=runs/q" },
      }),
    );
    expect(codex.progress().gstackResultLine).toBe("GSTACK_RESULT: skill=qa status=complete run=runs/q");
  });
});
