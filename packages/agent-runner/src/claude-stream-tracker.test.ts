import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClaudeStreamTracker } from "./claude-stream-tracker";

const session = "b268ffc8-61d1-49b4-be21-b0ab007a83ef";

/** A session as Claude Code 2.1.330 reports it: init, a Write, a git commit, a final text, result. */
function sessionEvents(): Record<string, unknown>[] {
  return [
    {
      type: "system",
      subtype: "init",
      cwd: "/tmp/repo",
      session_id: session,
      tools: ["Bash", "Write"],
      model: "claude-opus-5-5",
      permissionMode: "acceptEdits",
    },
    {
      type: "assistant",
      message: {
        id: "msg_1",
        role: "assistant",
        model: "claude-opus-5-5",
        content: [
          { type: "tool_use", id: "toolu_1", name: "Write", input: { file_path: "src/x.ts", content: "x" } },
        ],
      },
      session_id: session,
    },
    {
      type: "user",
      message: {
        role: "user",
        content: [{ tool_use_id: "toolu_1", type: "tool_result", content: "File created" }],
      },
      session_id: session,
    },
    {
      type: "assistant",
      message: {
        id: "msg_2",
        role: "assistant",
        model: "claude-opus-5-5",
        content: [{ type: "text", text: "Committing now." }],
      },
      session_id: session,
    },
    {
      type: "assistant",
      message: {
        id: "msg_2",
        role: "assistant",
        model: "claude-opus-5-5",
        content: [
          {
            type: "tool_use",
            id: "toolu_2",
            name: "Bash",
            input: { command: "git add -A && git commit -m 'Add x'" },
          },
        ],
      },
      session_id: session,
    },
    {
      type: "user",
      message: {
        role: "user",
        content: [
          {
            tool_use_id: "toolu_2",
            type: "tool_result",
            content: "This command requires approval",
            is_error: true,
          },
        ],
      },
      session_id: session,
    },
    {
      type: "system",
      subtype: "api_retry",
      attempt: 1,
      max_retries: 10,
      retry_delay_ms: 500,
      error_status: 529,
      error: "overloaded",
      session_id: session,
    },
    {
      type: "assistant",
      message: {
        id: "msg_3",
        role: "assistant",
        model: "claude-opus-5-5",
        content: [{ type: "text", text: "Done: added x." }],
      },
      session_id: session,
    },
    {
      type: "result",
      subtype: "success",
      is_error: false,
      num_turns: 3,
      result: "Done: added x.",
      session_id: session,
      total_cost_usd: 0.05,
      duration_ms: 2400,
      terminal_reason: "completed",
      stop_reason: "end_turn",
      permission_denials: [
        {
          tool_name: "Bash",
          tool_use_id: "toolu_2",
          tool_input: { command: "git add -A && git commit -m 'Add x'" },
        },
      ],
    },
  ];
}

function shuffleKeys(value: unknown, seed: number): unknown {
  if (Array.isArray(value)) return value.map((item, index) => shuffleKeys(item, seed + index));
  if (value === null || typeof value !== "object") return value;
  const entries = Object.entries(value);
  const rotated = entries.map((_, index) => entries[(index + seed) % entries.length]!);
  if (seed % 2 === 1) rotated.reverse();
  return Object.fromEntries(rotated.map(([key, item]) => [key, shuffleKeys(item, seed + key.length)]));
}

describe("ClaudeStreamTracker", () => {
  it("follows a session: id, turns, tools, last text and action, retries, denials, cost, result", () => {
    const tracker = new ClaudeStreamTracker();
    for (const event of sessionEvents()) tracker.line(JSON.stringify(event));
    const progress = tracker.progress();
    expect(progress).toMatchObject({
      sessionId: session,
      model: "claude-opus-5-5",
      turns: 3,
      toolUses: 2,
      toolUseCounts: { Write: 1, Bash: 1 },
      toolErrors: 1,
      lastAssistantText: "Done: added x.",
      lastAction: "Bash: git add -A && git commit -m 'Add x'",
      costUsd: 0.05,
      apiRetries: 1,
      lastApiRetry: { attempt: 1, maxRetries: 10, errorStatus: 529, error: "overloaded", retryDelayMs: 500 },
      events: 9,
    });
    expect(progress.permissionDenials).toEqual([
      { toolName: "Bash", toolUseId: "toolu_2", action: "Bash: git add -A && git commit -m 'Add x'" },
    ]);
    expect(tracker.result()).toMatchObject({
      subtype: "success",
      isError: false,
      numTurns: 3,
      text: "Done: added x.",
      terminalReason: "completed",
    });
  });

  it("counts one turn for the events of one API message before the result arrives", () => {
    const tracker = new ClaudeStreamTracker();
    for (const event of sessionEvents().slice(0, 5)) tracker.line(JSON.stringify(event));
    expect(tracker.progress().turns).toBe(2);
    expect(tracker.progress().lastAction).toBe("Bash: git add -A && git commit -m 'Add x'");
  });

  it("gives the same summary whatever the key order", () => {
    const reference = new ClaudeStreamTracker();
    for (const event of sessionEvents()) reference.line(JSON.stringify(event));
    fc.assert(
      fc.property(fc.nat(1000), (seed) => {
        const tracker = new ClaudeStreamTracker();
        for (const event of sessionEvents()) tracker.line(JSON.stringify(shuffleKeys(event, seed)));
        const { lastOutputAt: _ignored, ...progress } = tracker.progress();
        const { lastOutputAt: _also, ...expected } = reference.progress();
        expect(progress).toEqual(expected);
        expect(tracker.result()).toEqual(reference.result());
      }),
    );
  });

  it("reads an API failure reported as subtype success with is_error", () => {
    const tracker = new ClaudeStreamTracker();
    tracker.line(
      JSON.stringify({
        type: "system",
        subtype: "api_retry",
        attempt: 1,
        max_retries: 1,
        error_status: 429,
        error: "rate_limit",
      }),
    );
    tracker.line(
      JSON.stringify({
        type: "assistant",
        error: "rate_limit",
        api_error_status: 429,
        message: {
          id: "x",
          model: "<synthetic>",
          content: [{ type: "text", text: "API Error: Request rejected (429)" }],
        },
      }),
    );
    tracker.line(
      JSON.stringify({
        type: "result",
        subtype: "success",
        is_error: true,
        api_error_status: 429,
        api_error_type: "rate_limit_error",
        terminal_reason: "api_error",
        num_turns: 1,
      }),
    );
    expect(tracker.progress().assistantError).toBe("rate_limit");
    expect(tracker.result()).toMatchObject({
      subtype: "success",
      isError: true,
      apiErrorStatus: 429,
      apiErrorType: "rate_limit_error",
      terminalReason: "api_error",
    });
  });

  it("counts lines that are not JSON objects and ignores unknown event types", () => {
    const tracker = new ClaudeStreamTracker();
    for (const line of [
      "not json",
      "[1,2]",
      "42",
      '{"type":"rate_limit_event","x":1}',
      '{"type":"stream_event"}',
      "",
    ])
      tracker.line(line);
    expect(tracker.progress()).toMatchObject({ invalidLines: 3, events: 2, turns: 0 });
    expect(tracker.result()).toBeUndefined();
  });

  it("never throws on arbitrary JSON values", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom("system", "assistant", "user", "result"), (value, type) => {
        const tracker = new ClaudeStreamTracker();
        tracker.line(JSON.stringify(value));
        if (value !== null && typeof value === "object" && !Array.isArray(value)) {
          tracker.line(JSON.stringify({ ...value, type, message: value, permission_denials: value }));
        }
        expect(tracker.progress().events).toBeGreaterThanOrEqual(0);
      }),
    );
  });
});
