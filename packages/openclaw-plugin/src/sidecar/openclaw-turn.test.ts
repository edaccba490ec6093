import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bootstrapPrompt,
  messageFingerprint,
  parseRuntimeLine,
  QUEUED_MESSAGE_MARKER,
  readOpenClawTurn,
  withoutSentMessages,
} from "./openclaw-turn";
import { openclawStartedOver } from "./session-reset";

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

  it("leaves out what Claude Code was already given when OpenClaw sends an unanswered message again", () => {
    const user = fc
      .stringMatching(/^[a-z]{1,6}( [a-z]{1,6})?$/)
      .map((text) => `[Wed 2026-11-25 15:43 UTC] ${text}`);
    fc.assert(
      fc.property(fc.array(user, { minLength: 1, maxLength: 4 }), user, (aborted, newest) => {
        fc.pre(!aborted.includes(newest));
        const messages = [
          { role: "user", content: `[Wed 2026-11-25 15:40 UTC] opening\n\n${runtime}` },
          { role: "assistant", content: "ok" },
          ...aborted.map((content) => ({ role: "user", content })),
        ];
        // The aborted turn: what Claude Code was given then.
        const cut = readOpenClawTurn(messages);
        const sent = cut.parts.map(messageFingerprint);
        // The next turn: OpenClaw's history has no answer to them, so they come again before the newest.
        const next = readOpenClawTurn([...messages, { role: "user", content: newest }]);
        expect(next.parts).toEqual([...cut.parts, newest]);
        const rest = withoutSentMessages(next, sent);
        expect(rest?.parts).toEqual([newest]);
        expect(rest?.text).toBe(newest);
        // In the history it resends, OpenClaw may render the envelope differently or leave it out.
        const bare = aborted.map((text) => text.replace("[Wed 2026-11-25 15:43 UTC] ", ""));
        const resent = readOpenClawTurn([
          ...messages.slice(0, 2),
          ...bare.map((content) => ({ role: "user", content })),
          { role: "user", content: newest },
        ]);
        expect(withoutSentMessages(resent, sent)?.parts).toEqual([newest]);
        // Or folded into the newest message, as OpenClaw's recovery does after a crash.
        const folded = readOpenClawTurn([
          ...messages.slice(0, 2),
          {
            role: "user",
            content: `[Fri 2026-11-27 11:35 UTC] ${QUEUED_MESSAGE_MARKER}\n${bare.join("\n\n")}\n\n${newest}`,
          },
        ]);
        if (bare.length === 1)
          expect(withoutSentMessages(folded, sent)?.text).toBe(`[Fri 2026-11-27 11:35 UTC] ${newest}`);
        // Sent again with nothing new (a turn retried after a crash): nothing is left to send.
        expect(withoutSentMessages(cut, sent)).toBeUndefined();
        expect(withoutSentMessages(next, [])).toBe(next);
      }),
    );
  });
});

describe("whether OpenClaw started a session over", () => {
  const entry = {
    createdAt: "2026-11-27T10:00:00.000Z",
    openclawLifecycle: "rev-1",
    openclawSessionId: "s1",
  };
  it("compares OpenClaw's lifecycle revision, which /new and /reset renew while the session id stays", () => {
    expect(openclawStartedOver(entry, { lifecycle: "rev-1" }, "s1")).toBeUndefined();
    expect(openclawStartedOver(entry, { lifecycle: "rev-2" }, "s1")).toBe(
      "the session was reset in OpenClaw",
    );
    // The revision decides even when the start time says otherwise (clocks are not compared then).
    expect(
      openclawStartedOver(entry, { lifecycle: "rev-1", startedAt: Date.parse(entry.createdAt) + 1 }, "s1"),
    ).toBeUndefined();
    expect(openclawStartedOver(entry, { lifecycle: "rev-1" }, "s2")).toBe("OpenClaw started a new session");
    // Nothing known of OpenClaw's side (a client other than the gateway): the session continues.
    expect(openclawStartedOver(entry, undefined, undefined)).toBeUndefined();
  });

  it("for an entry recorded before revisions were kept, compares when each session started", () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e9, max: 1e9 }), (offset) => {
        const { openclawLifecycle: _, ...old } = entry;
        const startedAt = Date.parse(entry.createdAt) + offset;
        const verdict = openclawStartedOver(old, { lifecycle: "rev-9", startedAt }, "s1");
        expect(verdict !== undefined).toBe(offset > 0);
      }),
    );
  });
});

describe("a message OpenClaw folded into the next one", () => {
  it("loses only the queued block Claude Code already has, whatever blank lines it holds", () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z]{1,8}$/), { minLength: 1, maxLength: 3 }),
        fc.stringMatching(/^[a-z]{1,8}$/),
        (paragraphs, active) => {
          const earlier = paragraphs.join("\n\n");
          const turn = readOpenClawTurn([
            {
              role: "user",
              content: `[Fri 2026-11-27 11:35 UTC] ${QUEUED_MESSAGE_MARKER}\n${earlier}\n\n${active}`,
            },
          ]);
          expect(withoutSentMessages(turn, [messageFingerprint(earlier)])?.text).toBe(
            `[Fri 2026-11-27 11:35 UTC] ${active}`,
          );
          // A queued message Claude Code never got stays in.
          expect(withoutSentMessages(turn, [messageFingerprint("something else")])?.text).toBe(turn.text);
        },
      ),
    );
  });
});
