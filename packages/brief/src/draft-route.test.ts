import type { BriefDraft } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ANSWER_WINDOW_MS,
  addressOf,
  answerableDrafts,
  type DraftRoute,
  sameRoute,
  shownTo,
} from "./draft-route";

const route = (channel: string, to: string, extra: Partial<DraftRoute> = {}): DraftRoute => ({
  channel,
  to,
  ...extra,
});

const now = new Date("2026-11-27T12:00:00Z");
const hoursAgo = (hours: number) => new Date(now.getTime() - hours * 3_600_000).toISOString();

function draft(id: string, created: string, extra: Partial<BriefDraft> = {}): BriefDraft {
  return {
    draft_id: id,
    created_at: created,
    project: "acme-baku",
    project_dir: "/repos/baku",
    task: "Finish the token refresh.",
    source: "checkpoint",
    dispatch_id: `dispatch-${id.slice("draft-".length)}`,
    ...extra,
  };
}

describe("sameRoute", () => {
  it("is one person whether the address carries the channel's prefix or a target kind", () => {
    expect(sameRoute(route("telegram", "42"), route("telegram", "telegram:42"))).toBe(true);
    expect(sameRoute(route("slack", "user:U1"), route("Slack", "U1"))).toBe(true);
    expect(sameRoute(route("recording-chat", "user:person"), route("recording-chat", "person"))).toBe(true);
    expect(addressOf(route("telegram", "telegram:user:42"))).toBe("42");
  });

  it("is another person on another channel, address, account or thread", () => {
    expect(sameRoute(route("telegram", "42"), route("slack", "42"))).toBe(false);
    expect(sameRoute(route("telegram", "42"), route("telegram", "43"))).toBe(false);
    // Addresses keep the channel's own casing.
    expect(sameRoute(route("slack", "U1"), route("slack", "u1"))).toBe(false);
    expect(sameRoute(route("t", "42", { account_id: "a" }), route("t", "42", { account_id: "b" }))).toBe(
      false,
    );
    expect(sameRoute(route("t", "42", { thread_id: "1" }), route("t", "42", { thread_id: "2" }))).toBe(false);
    // A scheduled delivery that names no account or thread still reaches the person's chat.
    expect(sameRoute(route("t", "42"), route("t", "42", { account_id: "default", thread_id: "7" }))).toBe(
      true,
    );
  });

  const routes = fc.record(
    {
      channel: fc.constantFrom("telegram", "slack", "Telegram"),
      to: fc.oneof(
        fc.constantFrom("42", "U1", "u1", "user:42", "telegram:42", "slack:user:U1", "channel:C9"),
        fc.stringMatching(/^[\w:-]{1,12}$/),
      ),
      account_id: fc.constantFrom("a", "b"),
      thread_id: fc.constantFrom("1", "2"),
    },
    { requiredKeys: ["channel", "to"] },
  );

  it("judges the same pair the same way both ways round, and a route is its own", () => {
    fc.assert(
      fc.property(routes, routes, (a, b) => {
        expect(sameRoute(a, a)).toBe(true);
        expect(sameRoute(a, b)).toBe(sameRoute(b, a));
      }),
    );
  });

  it("does not change its judgment when an address gains the channel's prefix or a kind", () => {
    fc.assert(
      fc.property(routes, routes, fc.constantFrom("", "user:", "dm:"), (a, b, kind) => {
        const plain = addressOf(a);
        const prefixed = { ...a, to: `${a.channel}:${kind}${plain}` };
        expect(sameRoute(prefixed, b)).toBe(sameRoute(a, b));
      }),
    );
  });
});

describe("answerableDrafts", () => {
  const person = { sessionKey: "agent:main:person", route: route("telegram", "42") };

  it("finds the drafts delivered to the person or given in their session, newest first", () => {
    const delivered = draft("draft-a", hoursAgo(3), {
      reply_to: { runtime: "openclaw", session_key: "agent:main:cron:job:run:1" },
      delivered_to: route("telegram", "42"),
    });
    const inSession = draft("draft-b", hoursAgo(1), {
      reply_to: { runtime: "openclaw", session_key: "agent:main:person" },
    });
    const elsewhere = draft("draft-c", hoursAgo(1), { delivered_to: route("telegram", "99") });
    const sent = draft("draft-d", hoursAgo(2), {
      delivered_to: route("telegram", "user:42"),
      sent: { dispatch_id: "dispatch-d", at: hoursAgo(1) },
    });
    const found = answerableDrafts([delivered, inSession, elsewhere, sent], person, now);
    expect(found.unsent.map((item) => item.draft_id)).toEqual(["draft-b", "draft-a"]);
    expect(found.sent.map((item) => item.draft_id)).toEqual(["draft-d"]);
  });

  it("leaves out drafts older than the window, and any from the future", () => {
    const old = draft("draft-old", hoursAgo(ANSWER_WINDOW_MS / 3_600_000 + 0.01), {
      delivered_to: person.route,
    });
    const edge = draft("draft-edge", hoursAgo(ANSWER_WINDOW_MS / 3_600_000), { delivered_to: person.route });
    const future = draft("draft-next", new Date(now.getTime() + 60_000).toISOString(), {
      delivered_to: person.route,
    });
    expect(answerableDrafts([old, edge, future], person, now).unsent.map((item) => item.draft_id)).toEqual([
      "draft-edge",
    ]);
  });

  it("answers a draft made this very moment (the pinned counterexample of the property below)", () => {
    const fresh = draft("draft-now", now.toISOString(), { delivered_to: person.route });
    expect(answerableDrafts([fresh], person, now).unsent).toEqual([fresh]);
  });

  it("agrees with shownTo and the window on every draft (property)", () => {
    const drafts = fc.array(
      fc.record({
        seconds: fc.integer({ min: -3600, max: 30 * 3600 }),
        to: fc.constantFrom("42", "user:42", "43", undefined),
        session: fc.constantFrom("agent:main:person", "agent:main:other", undefined),
        sent: fc.boolean(),
      }),
      { maxLength: 8 },
    );
    fc.assert(
      fc.property(drafts, (specs) => {
        const made = specs.map((spec, index) =>
          draft(`draft-${index}`, hoursAgo(spec.seconds / 3600), {
            ...(spec.to ? { delivered_to: route("telegram", spec.to) } : {}),
            ...(spec.session
              ? { reply_to: { runtime: "openclaw" as const, session_key: spec.session } }
              : {}),
            ...(spec.sent ? { sent: { dispatch_id: `dispatch-${index}`, at: now.toISOString() } } : {}),
          }),
        );
        const found = answerableDrafts(made, person, now);
        // Judged from each draft's own timestamp, as kept.
        const expected = made.filter((item) => {
          const age = now.getTime() - Date.parse(item.created_at);
          return age >= 0 && age <= ANSWER_WINDOW_MS && shownTo(item, person);
        });
        expect([...found.unsent, ...found.sent].map((item) => item.draft_id).sort()).toEqual(
          expected.map((item) => item.draft_id).sort(),
        );
        expect(found.unsent.every((item) => !item.sent)).toBe(true);
        const times = found.unsent.map((item) => Date.parse(item.created_at));
        expect(times).toEqual([...times].sort((a, b) => b - a));
      }),
    );
  });
});
