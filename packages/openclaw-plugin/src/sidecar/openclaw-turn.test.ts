import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bootstrapPrompt, parseRuntimeLine, readOpenClawTurn } from "./openclaw-turn";

const runtime =
  "Runtime: agent=main | session=agent:main:probe | sessionId=d6b1e07f-479a-4da1-9106-23e1acda05fe | host=vm | repo=/home/me/.openclaw/workspace | model=cc/m";

describe("reading an OpenClaw turn", () => {
  it("finds the session key on every turn and sends only the newest words", () => {
    const messages = [
      { role: "system", content: "You are a personal assistant running inside OpenClaw." },
      { role: "user", content: `[Wed 2026-11-25 15:43 UTC] first hello\n\n${runtime}` },
      { role: "assistant", content: "Hello back" },
      { role: "user", content: "[Wed 2026-11-25 15:44 UTC] second hello" },
      {
        role: "user",
        content: [
          { type: "text", text: "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nActive exec sessions: none" },
        ],
      },
    ];
    const turn = readOpenClawTurn(messages);
    expect(turn).toMatchObject({
      sessionKey: "agent:main:probe",
      keyFromRuntime: true,
      openclawSessionId: "d6b1e07f-479a-4da1-9106-23e1acda05fe",
      workspace: "/home/me/.openclaw/workspace",
      agentId: "main",
      text: "[Wed 2026-11-25 15:44 UTC] second hello",
    });
    const first = readOpenClawTurn(messages.slice(0, 2));
    expect(first.text).toBe("[Wed 2026-11-25 15:43 UTC] first hello");
    expect(bootstrapPrompt({ turn: first, projectDir: "/p" })).toContain(
      "OpenClaw session: agent:main:probe",
    );
  });

  it("derives a stable key from the conversation's start when there is no runtime line", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (opening, later) => {
        const one = readOpenClawTurn([{ role: "user", content: opening }]);
        const two = readOpenClawTurn([
          { role: "user", content: opening },
          { role: "assistant", content: "ok" },
          { role: "user", content: later },
        ]);
        expect(two.sessionKey).toBe(one.sessionKey);
        expect(one.keyFromRuntime).toBe(false);
      }),
    );
    expect(readOpenClawTurn([{ role: "user", content: "hi" }], "alice").sessionKey).toBe("user:alice");
  });

  it("reads every field of the runtime line", () => {
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.stringMatching(/^[a-z_]{1,8}$/),
          fc
            .stringMatching(/^[^|\n=]{1,20}$/)
            .map((value) => value.trim())
            .filter(Boolean),
        ),
        (fields) => {
          const line = `Runtime: ${Object.entries(fields)
            .map(([key, value]) => `${key}=${value}`)
            .join(" | ")}`;
          if (Object.keys(fields).length === 0) return;
          expect(parseRuntimeLine(`before\n${line}\nafter`)).toEqual(fields);
        },
      ),
    );
  });
});
