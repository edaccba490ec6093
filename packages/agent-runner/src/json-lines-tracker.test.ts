import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonLinesTracker } from "./json-lines-tracker";

function follow(lines: string[]) {
  const tracker = new JsonLinesTracker();
  for (const line of lines) tracker.line(line);
  return tracker;
}

describe("JsonLinesTracker", () => {
  it("follows Codex exec --json events", () => {
    const tracker = follow(
      [
        { type: "thread.started", thread_id: "t-1" },
        { type: "turn.started" },
        { type: "error", message: "Reconnecting... 1/5" },
        { type: "item.completed", item: { type: "command_execution", command: "pnpm test", exit_code: 1 } },
        {
          type: "item.completed",
          item: { type: "file_change", changes: [{ path: "src/a.ts", kind: "update" }] },
        },
        { type: "item.completed", item: { type: "agent_message", text: "Fixed the test." } },
        { type: "turn.completed", usage: { input_tokens: 1, output_tokens: 1 } },
      ].map((event) => JSON.stringify(event)),
    );
    expect(tracker.progress()).toMatchObject({
      sessionId: "t-1",
      turns: 1,
      toolUses: 2,
      toolErrors: 1,
      toolUseCounts: { Bash: 1, Edit: 1 },
      lastAction: "Edit src/a.ts",
      lastAssistantText: "Fixed the test.",
      apiRetries: 1,
    });
    expect(tracker.result()).toMatchObject({ isError: false, text: "Fixed the test." });
  });

  it("keeps a failed turn as the result even if a completion follows", () => {
    const tracker = follow([
      JSON.stringify({ type: "turn.failed", error: { message: "unexpected status 401 Unauthorized" } }),
      JSON.stringify({ type: "turn.completed" }),
    ]);
    expect(tracker.result()).toMatchObject({ isError: true, text: "unexpected status 401 Unauthorized" });
  });

  it("follows Gemini-style stream-json", () => {
    const tracker = follow(
      [
        { type: "init", session_id: "g-1", model: "gemini" },
        { type: "message", role: "user", content: "task" },
        { type: "message", role: "assistant", content: "Reading." },
        { type: "tool_use", tool_name: "read_file", parameters: { path: "README.md" } },
        { type: "result", status: "success", stats: {} },
      ].map((event) => JSON.stringify(event)),
    );
    expect(tracker.progress()).toMatchObject({
      sessionId: "g-1",
      turns: 1,
      lastAssistantText: "Reading.",
      lastAction: "read_file README.md",
    });
    expect(tracker.result()).toMatchObject({ subtype: "success", isError: false });
    expect(
      follow([JSON.stringify({ type: "result", status: "error", error: { message: "quota" } })]).result(),
    ).toMatchObject({
      isError: true,
      text: "quota",
    });
  });

  it("takes the last plain-text line as what the agent said", () => {
    fc.assert(
      fc.property(fc.array(fc.string().filter((line) => !line.trim().startsWith("{"))), (lines) => {
        const tracker = follow(lines);
        const lastText = lines
          .map((line) => line.trim())
          .filter(Boolean)
          .at(-1);
        expect(tracker.progress().lastAssistantText).toBe(lastText);
        expect(tracker.progress().events).toBe(0);
      }),
    );
  });

  it("never throws on arbitrary JSON and counts only objects as events", () => {
    fc.assert(
      fc.property(fc.array(fc.jsonValue()), (values) => {
        const tracker = follow(values.map((value) => JSON.stringify(value)));
        const objects = values.filter(
          (value) => value !== null && typeof value === "object" && !Array.isArray(value),
        );
        expect(tracker.progress().events).toBe(objects.length);
      }),
    );
  });
});
