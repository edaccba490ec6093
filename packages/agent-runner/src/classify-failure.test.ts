import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { AgentResultSummary } from "./agent-progress";
import { classifyFailure, type RunOutcome } from "./classify-failure";

const ended: RunOutcome = {
  exitCode: 0,
  signal: null,
  cancelled: false,
  timedOut: false,
  expectsResult: true,
};

function apiFailure(fields: Partial<AgentResultSummary>): RunOutcome {
  return {
    ...ended,
    exitCode: 1,
    result: {
      subtype: "success",
      isError: true,
      terminalReason: "api_error",
      permissionDenials: 0,
      ...fields,
    },
  };
}

describe("classifyFailure", () => {
  it("returns nothing for a successful run", () => {
    expect(
      classifyFailure({
        ...ended,
        result: { subtype: "success", isError: false, text: "Done.", permissionDenials: 0 },
      }),
    ).toBeUndefined();
  });

  it.each([
    [{ apiErrorStatus: 429, text: "API Error: Request rejected (429)" }, "rate_limit", true, false],
    [{ apiErrorStatus: 400, text: "Prompt is too long" }, "context_overflow", true, true],
    [{ terminalReason: "prompt_too_long", text: "anything" }, "context_overflow", true, true],
    [{ apiErrorStatus: 413 }, "context_overflow", true, true],
    [{ apiErrorStatus: 401, text: "Invalid API key" }, "auth", false, false],
    [{ apiErrorStatus: 402 }, "auth", false, false],
    [{ apiErrorStatus: 500 }, "tool_failure", true, false],
    [{ apiErrorStatus: 529, text: "Overloaded" }, "tool_failure", true, false],
    [{ apiErrorType: "rate_limit_error" }, "rate_limit", true, false],
    [{ apiErrorStatus: 400, text: "tools.0: invalid" }, "logic_error", false, false],
  ] as const)("reads result fields %o as %s", (fields, kind, retryable, withoutLearnings) => {
    expect(classifyFailure(apiFailure(fields))).toMatchObject({
      kind,
      retryable,
      retryWithoutLearnings: withoutLearnings,
    });
  });

  it("prefers the structured status over contradicting prose", () => {
    const failure = classifyFailure(
      apiFailure({ apiErrorStatus: 401, text: "Prompt is too long? rate limit? overloaded" }),
    );
    expect(failure).toMatchObject({ kind: "auth", evidence: "result.api_error_status=401" });
  });

  it.each([
    ["rate_limit", "rate_limit"],
    ["authentication_failed", "auth"],
    ["billing_error", "auth"],
    ["server_error", "tool_failure"],
  ] as const)("reads the assistant error %s when the result has no status", (assistantError, kind) => {
    const outcome: RunOutcome = {
      ...apiFailure({ terminalReason: "api_error" }),
      progress: { assistantError },
    };
    expect(classifyFailure(outcome)?.kind).toBe(kind);
  });

  it("treats running out of turns or budget as a logic error", () => {
    expect(
      classifyFailure({
        ...ended,
        exitCode: 1,
        result: { subtype: "error_max_turns", isError: true, permissionDenials: 0 },
      }),
    ).toMatchObject({
      kind: "logic_error",
      retryable: false,
    });
  });

  it("calls a run Claude Code stopped at its own --max-budget-usd budget_exhausted, with what it spent", () => {
    expect(
      classifyFailure({
        ...ended,
        exitCode: 1,
        result: {
          subtype: "error_max_budget_usd",
          isError: true,
          terminalReason: "budget_exhausted",
          costUsd: 4.017,
          permissionDenials: 0,
        },
      }),
    ).toMatchObject({
      kind: "budget_exhausted",
      retryable: false,
      message: "Spent $4.02: the agent reached its budget without finishing.",
    });
  });

  it("calls a run the runner stopped at the cap budget_exhausted, whatever the stop did to the exit", () => {
    expect(
      classifyFailure({
        ...ended,
        exitCode: null,
        signal: "SIGTERM",
        budgetStop: { spentUsd: 1.5, budgetUsd: 1 },
      }),
    ).toMatchObject({
      kind: "budget_exhausted",
      retryable: false,
      message: "Spent $1.50 of its $1.00 budget; the agent was stopped.",
      evidence: "budget",
    });
  });

  it("treats an error during execution as transient", () => {
    expect(
      classifyFailure({
        ...ended,
        exitCode: 1,
        result: { subtype: "error_during_execution", isError: true, permissionDenials: 0 },
      })?.kind,
    ).toBe("tool_failure");
  });

  it("uses the CLI's own retries when it died before reporting", () => {
    const outcome: RunOutcome = {
      ...ended,
      exitCode: null,
      signal: "SIGKILL",
      progress: { lastApiRetry: { errorStatus: 429 } },
    };
    expect(classifyFailure(outcome)).toMatchObject({ kind: "rate_limit", evidence: "system/api_retry" });
  });

  it("falls back to prose, then to a logic error for a bare non-zero exit", () => {
    expect(
      classifyFailure({
        ...ended,
        exitCode: 1,
        expectsResult: false,
        stderrTail: "Error: prompt is too long",
      })?.kind,
    ).toBe("context_overflow");
    expect(
      classifyFailure({ ...ended, exitCode: 1, expectsResult: false, stderrTail: "429 Too Many Requests" })
        ?.kind,
    ).toBe("rate_limit");
    expect(
      classifyFailure({ ...ended, exitCode: 2, expectsResult: false, stderrTail: "segfault" }),
    ).toMatchObject({
      kind: "logic_error",
      evidence: "exit",
    });
    expect(classifyFailure({ ...ended, exitCode: 0 })).toMatchObject({
      kind: "logic_error",
      evidence: "no-result",
    });
  });

  it("reports an agent that says it cannot do the task as a logic error", () => {
    const outcome: RunOutcome = {
      ...ended,
      result: {
        subtype: "success",
        isError: false,
        text: "I cannot do this: the repo is empty.",
        permissionDenials: 0,
      },
    };
    expect(classifyFailure(outcome)).toMatchObject({ kind: "logic_error", evidence: "prose:refusal" });
  });

  it("says cancelled and timeout before anything else", () => {
    expect(
      classifyFailure({ ...apiFailure({ apiErrorStatus: 429 }), cancelled: true, cancelReason: "user" }),
    ).toMatchObject({
      kind: "cancelled",
      message: "Cancelled: user.",
    });
    expect(classifyFailure({ ...apiFailure({ apiErrorStatus: 429 }), timedOut: true })?.kind).toBe("timeout");
  });

  it("only ever retries rate limits, overflows and transient failures, and drops learnings only for overflows", () => {
    fc.assert(
      fc.property(
        fc.record({
          exitCode: fc.option(fc.integer({ min: 0, max: 255 }), { nil: null }),
          status: fc.option(fc.integer({ min: 100, max: 599 }), { nil: undefined }),
          text: fc.option(fc.string(), { nil: undefined }),
          isError: fc.boolean(),
          subtype: fc.constantFrom("success", "error_max_turns", "error_during_execution", "other"),
          terminalReason: fc.option(
            fc.constantFrom("completed", "api_error", "prompt_too_long", "max_turns"),
            { nil: undefined },
          ),
          assistantError: fc.option(
            fc.constantFrom("rate_limit", "authentication_failed", "server_error", "unknown"),
            {
              nil: undefined,
            },
          ),
        }),
        (sample) => {
          const failure = classifyFailure({
            exitCode: sample.exitCode,
            signal: null,
            cancelled: false,
            timedOut: false,
            expectsResult: true,
            result: {
              subtype: sample.subtype,
              isError: sample.isError,
              apiErrorStatus: sample.status,
              terminalReason: sample.terminalReason,
              text: sample.text,
              permissionDenials: 0,
            },
            progress: { assistantError: sample.assistantError },
          });
          if (!failure) return;
          expect(failure.retryable).toBe(
            ["rate_limit", "context_overflow", "tool_failure"].includes(failure.kind),
          );
          expect(failure.retryWithoutLearnings).toBe(failure.kind === "context_overflow");
          expect(failure.message.length).toBeGreaterThan(0);
        },
      ),
    );
  });
});

describe("failures of the CLI itself", () => {
  it("tells a crash from the task's failure, and a missing CLI from both", () => {
    expect(classifyFailure({ ...ended, exitCode: null, signal: "SIGABRT" })).toMatchObject({
      kind: "agent_crashed",
      evidence: "signal=SIGABRT",
    });
    expect(
      classifyFailure({
        ...ended,
        exitCode: 1,
        expectsResult: false,
        stderrTail: "file:///x/cli.js:10\nTypeError: boom\n    at main (file:///x/cli.js:10:3)",
      }),
    ).toMatchObject({ kind: "agent_crashed", evidence: "stderr:crash" });
    expect(classifyFailure({ ...ended, exitCode: 1 })).toMatchObject({
      kind: "agent_crashed",
      evidence: "exit:no-result",
    });
    expect(
      classifyFailure({ ...ended, exitCode: 1, stderrTail: "Error: claude native binary not installed" }),
    ).toMatchObject({ kind: "spawn_error", evidence: "stderr:not-installed" });
  });

  it("ends an authentication failure with where that agent's login or key must live", () => {
    const claude = classifyFailure({ ...apiFailure({ text: "Invalid API key · Please run /login" }) });
    expect(claude?.kind).toBe("auth");
    expect(claude?.message).toMatch(/^Invalid API key · Please run \/login\. To fix: sign Claude Code in/);
    const codex = classifyFailure({ ...apiFailure({ apiErrorStatus: 401, text: "401" }), agent: "codex" });
    expect(codex?.message).toContain("~/.codex/auth.json");
    expect(codex?.message).toContain("OPENAI_API_KEY");
  });
});
