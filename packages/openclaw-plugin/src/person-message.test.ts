import type { AwaitingNotice, Completion } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { judgeAnswer, words } from "./answer-judge";
import {
  durationText,
  errorText,
  PERSON_TEXT_LIMIT,
  personAwaitingMessage,
  personCompletionMessage,
  shortId,
} from "./person-message";
import { withinLimit } from "./session-delivery";

const ID = "dispatch-20261127T020932-314c25ea";

/** What a person must never be sent: the agent's tools, report keys, JSON, Markdown marks, internal addresses. */
function expectPlain(text: string): void {
  expect(text).not.toMatch(/gstack_(answer|land|report|dispatch|status|cancel)/);
  expect(text).not.toContain("report key");
  expect(text).not.toContain(ID);
  expect(text).not.toMatch(/\*\*|`/);
  expect(text).not.toMatch(/127\.0\.0\.1|localhost:\d/);
  expect(text).not.toMatch(/\{\s*"/);
}

const notice = (fields: Partial<AwaitingNotice> = {}): AwaitingNotice => ({
  dispatch_id: ID,
  status: "awaiting",
  project: "acme",
  kind: "plan",
  since: "2026-11-27T02:09:32Z",
  expires_at: "2026-11-30T02:09:32Z",
  round: 1,
  summary: "## Plan\n1. Add `login.ts`\n2. Add **tests**",
  how_to_answer: `gstack-dispatch answer ${ID} approve`,
  ...fields,
});

const completion = (fields: Partial<Completion> = {}): Completion => ({
  dispatch_id: ID,
  status: "completed",
  duration: 134,
  project: "acme",
  branch: `gstack/${ID}`,
  base: "main",
  commits: 2,
  commit_shas: ["abc1234", "def5678"],
  landing: "awaiting",
  turns: 1,
  cost_usd: 0.42,
  budget_usd: 5,
  ...fields,
});

const REPORT = `---\ndispatch_id: ${ID}\n---\n\n# Add the login page\n\n## What shipped\n\n- login.ts with \`validate()\`\n- its tests\n\n## Decisions made\n\nNone reported.\n\n## Learnings logged\n\nNone reported.\n\n## Needs human judgment\n\nNothing flagged.\n`;

describe("what the person reads", () => {
  it("a plan says it needs them first, shows the plan, and how to answer in plain words", () => {
    const text = personAwaitingMessage({ notice: notice(), task: "Add the login page" });
    expect(text.split("\n")[0]).toBe(
      "Needs your answer: a plan for acme, “Add the login page”. Nothing was changed yet.",
    );
    expect(text).toContain("1. Add login.ts");
    expect(text).not.toContain("#");
    expect(text).not.toMatch(/^Plan:?$/m);
    expect(text).toContain(
      "Reply “approve” to carry it out, “revise: …” with what to change, or “reject: …” with why.",
    );
    expect(text).toContain("cancelled on 30 Nov at 02:09 UTC");
    expect(text.trim().split("\n").at(-1)).toBe("(dispatch 314c25ea)");
    expectPlain(text);
  });

  it("a plan from a daemon on another machine says where to answer", () => {
    const text = personAwaitingMessage({ notice: notice(), remote: true });
    expect(text).toContain(`answer there: gstack-dispatch answer ${ID} approve`);
    expect(text).not.toContain("Reply “approve”");
  });

  it("a long plan is shortened within the limit and says how to read the rest", () => {
    const summary = Array.from(
      { length: 400 },
      (_, index) => `${index + 1}. Step number ${index + 1} of the plan`,
    ).join("\n");
    const text = personAwaitingMessage({ notice: notice({ summary }) });
    expect([...text].length).toBeLessThanOrEqual(PERSON_TEXT_LIMIT);
    expect(text).toContain("Say “show the whole plan” to read the rest.");
    expect(text).toContain("Reply “approve”");
  });

  it("a gate numbers its decisions with the recommendation and the reply grammar", () => {
    const text = personAwaitingMessage({
      notice: notice({
        kind: "gate",
        round: 2,
        items: [
          { label: "d2", title: "Cache layer", options: ["Redis", "In memory"], recommended: "In memory" },
          { label: "d3", title: "Naming", options: ["keep", "rename"], recommended: null },
        ],
      }),
    });
    expect(text.startsWith("Needs your answer: gstack stopped at a gate for acme")).toBe(true);
    expect(text).toContain("1. Cache layer: d2a) Redis; d2b) In memory. Recommended: d2b.");
    expect(text).toContain("2. Naming: d3a) keep; d3b) rename.");
    expect(text).toContain("Reply “all” to take every recommendation, or choose: “d2b”, “all except d2b”.");
    expectPlain(text);
  });

  it("work waiting on a branch is 'Ready to land', with what shipped, the facts and the reply words", () => {
    const text = personCompletionMessage({ completion: completion(), reportMarkdown: REPORT });
    expect(text.split("\n")[0]).toBe("Ready to land: acme, “Add the login page”.");
    expect(text).toContain("What shipped:\n- login.ts with validate()\n- its tests");
    expect(text).toContain("2 commits on its own branch · 2 min 14 s · $0.42 of $5.00");
    expect(text).toContain("Reply “land” to bring the work into main, “open a PR”, or “discard”.");
    expect(text).not.toContain("Needs your judgment");
    expectPlain(text);
    const named = personCompletionMessage({ completion: completion({ branch: "fix/login" }) });
    expect(named).toContain("2 commits on fix/login ·");
  });

  it("a failure with nothing committed is 'Failed', says why once, gives one piece of advice and offers nothing to land", () => {
    const error =
      "API Error: Connection error to http://127.0.0.1:41234/v1/messages after 3 retries; the service did not answer in time and the request was abandoned by the client because of repeated connection resets";
    const report = `---\nx: 1\n---\n\n# Fix the build\n\n## What shipped\n\nNothing was committed.\n\n## Needs human judgment\n\n- The dispatch ended **failed** (tool_failure): ${error.slice(0, 80)}..\n- The agent did not end with the requested report; review its work directly.\n`;
    const text = personCompletionMessage({
      completion: completion({
        status: "failed",
        commits: 0,
        error,
        error_kind: "tool_failure",
        commit_shas: [],
      }),
      reportMarkdown: report,
    });
    expect(text.split("\n")[0]).toBe("Failed: acme, “Fix the build”.");
    expect(text.match(/Connection error/g)).toHaveLength(1);
    expect(text).toContain("Connection error to a local service");
    expect(text).toContain("A tool the agent needed failed.");
    expect(text).not.toMatch(/try again in a moment/);
    expect(text).not.toMatch(/\bland\b|discard/);
    expect(text).toContain("Nothing committed");
    expect(text).not.toContain("..");
    expectPlain(text);
  });

  it("a failure that did commit keeps its work landable", () => {
    const text = personCompletionMessage({
      completion: completion({ status: "failed", error: "out of turns", error_kind: "logic_error" }),
    });
    expect(text.startsWith("Failed: acme.")).toBe(true);
    expect(text).toContain("Its commits are kept on their branch. Reply “land”");
  });

  it("work already in place or landed is news: 'Done', nothing to reply", () => {
    for (const landing of ["in_place", "landed", "pr_opened"] as const) {
      const text = personCompletionMessage({ completion: completion({ landing, pr: "acme/app#7" }) });
      expect(text.startsWith("Done: acme.")).toBe(true);
      expect(text).not.toContain("Reply");
    }
  });

  it("helpers: short ids, durations, errors", () => {
    expect(shortId(ID)).toBe("314c25ea");
    expect(shortId("dispatch-20261125-changelog")).toBe("dispatch-20261125-changelog");
    expect(durationText(1)).toBe("1 s");
    expect(durationText(60)).toBe("1 min");
    expect(durationText(3725)).toBe("1 h 2 min");
    expect(errorText("boom\nstack")).toBe("boom.");
    expect(errorText("   ")).toBeUndefined();
  });
});

const arbitraryText = fc.string({ unit: "grapheme", maxLength: 400 });
const arbitraryCompletion = fc.record({
  status: fc.constantFrom("completed", "failed", "cancelled", "timeout"),
  commits: fc.option(fc.nat(20), { nil: undefined }),
  landing: fc.option(fc.constantFrom("awaiting", "landed", "pr_opened", "discarded", "in_place"), {
    nil: undefined,
  }),
  error: fc.option(arbitraryText, { nil: undefined }),
  error_kind: fc.option(
    fc.constantFrom(
      "rate_limit",
      "tool_failure",
      "logic_error",
      "auth",
      "timeout",
      "unknown",
      "budget_exhausted",
    ),
    { nil: undefined },
  ),
  duration: fc.nat(100_000),
  summary: fc.option(fc.string({ maxLength: 5000 }), { nil: undefined }),
  task: fc.option(arbitraryText, { nil: undefined }),
  judgment: fc.array(arbitraryText, { maxLength: 30 }),
});

describe("person messages, for any report", () => {
  it("stay within the limit, start with what they need of the person, and offer landing only for commits awaiting their word", () => {
    fc.assert(
      fc.property(arbitraryCompletion, (input) => {
        const { summary, task, judgment, ...fields } = input;
        const done = completion({ ...fields, commit_shas: [] } as Partial<Completion>);
        const text = personCompletionMessage({
          completion: done,
          ...(summary !== undefined ? { summary } : {}),
          ...(task !== undefined ? { task } : {}),
          needsJudgment: judgment,
        });
        expect([...text].length).toBeLessThanOrEqual(PERSON_TEXT_LIMIT);
        expect(text).toMatch(/^(Ready to land|Done|Failed|Cancelled|Ran out of time): /);
        const offers = text.includes("Reply “land”");
        expect(offers).toBe(done.landing === "awaiting" && (done.commits ?? 0) > 0);
        expect(text).not.toContain("report key");
        expect(text.trim().endsWith("(dispatch 314c25ea)")).toBe(true);
      }),
    );
  });

  it("plans of any length fit and keep their reply words", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 8000 }), fc.integer({ min: 1, max: 9 }), (summary, round) => {
        const text = personAwaitingMessage({ notice: notice({ summary, round }) });
        expect([...text].length).toBeLessThanOrEqual(PERSON_TEXT_LIMIT);
        expect(text.startsWith("Needs your answer: a plan")).toBe(true);
        expect(text).toContain("Reply “approve”");
      }),
    );
  });

  it("withinLimit keeps a text that fits as it is and cuts one that does not to the limit", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 3000 }), fc.integer({ min: 80, max: 4000 }), (text, limit) => {
        const out = withinLimit(text, limit);
        if ([...text].length <= limit) expect(out).toBe(text);
        else {
          expect([...out].length).toBeLessThanOrEqual(limit);
          expect(out.endsWith("to read the rest.")).toBe(true);
        }
      }),
    );
  });
});

describe("the agent's answer to a report", () => {
  it("is silent for NO_REPLY and acknowledgements, a repeat when the person's message says it, news otherwise", () => {
    const news = "Ready to land: acme, “Add the login page”. What shipped: login.ts and its tests.";
    expect(judgeAnswer("NO_REPLY", news)).toBe("silent");
    expect(judgeAnswer(" no_reply. ", news)).toBe("silent");
    expect(judgeAnswer("“NO_REPLY”", news)).toBe("silent");
    expect(judgeAnswer("Done.", news)).toBe("silent");
    expect(judgeAnswer("Ready to land: acme — add the login page!", news)).toBe("repeat");
    expect(judgeAnswer("You froze the auth module last week and this touches it.", news)).toBe("adds");
  });

  it("calls any run of three or more of the message's own words a repeat", () => {
    fc.assert(
      fc.property(
        fc.array(fc.stringMatching(/^[a-z]{1,8}$/), { minLength: 3, maxLength: 60 }),
        fc.nat(),
        fc.nat(),
        (list, from, size) => {
          const start = from % (list.length - 2);
          const length = 3 + (size % (list.length - start - 2));
          const answer = list.slice(start, start + length).join(" ");
          expect(words(answer).length).toBeGreaterThanOrEqual(3);
          expect(judgeAnswer(`${answer}.`, list.join(", "))).toBe("repeat");
        },
      ),
    );
  });
});

describe("the review page's link", () => {
  const LINK = "https://gateway.example.ts.net/gstack/review/d?c=djF8ZGlzcGF0Y2g.bWFj";

  it("a plan, a gate and a report each end with the link, before the short id; none without one", () => {
    const plan = personAwaitingMessage({ notice: notice(), link: LINK });
    expect(plan.split("\n").slice(-2)).toEqual([`Read the plan and answer: ${LINK}`, "(dispatch 314c25ea)"]);
    const gate = personAwaitingMessage({
      notice: notice({
        kind: "gate",
        items: [
          { label: "d2", title: "Drop the cache", options: ["Keep it", "Drop it"], recommended: "Keep it" },
        ],
      }),
      link: LINK,
    });
    expect(gate).toContain(`Read the decisions and answer: ${LINK}`);
    const ready = personCompletionMessage({ completion: completion(), reportMarkdown: REPORT, link: LINK });
    expect(ready).toContain(`Read the change and land it: ${LINK}`);
    const failed = personCompletionMessage({
      completion: completion({ status: "failed", commits: 0, error: "boom", error_kind: "logic_error" }),
      link: LINK,
    });
    expect(failed).toContain(`Read the report: ${LINK}`);
    for (const text of [plan, gate, ready, failed]) expectPlain(text);
    // A dispatch of a daemon on another host: no link, though one were at hand; where the work is read.
    const far = personCompletionMessage({ completion: completion(), link: LINK, remote: true });
    expect(far).not.toContain(LINK);
    expect(far).not.toContain("Reply “land”");
    expect(far).toContain(
      `read it there (git diff main...gstack/${ID}) and land it there: gstack-dispatch land ${ID}`,
    );
    // The command on that machine needs the whole id, as the remote plan's answer line does.
    expect(far).not.toMatch(/gstack_land|\*\*|`|127\.0\.0\.1/);
    expect(personAwaitingMessage({ notice: notice() })).not.toContain("/gstack/review");
    expect(personCompletionMessage({ completion: completion() })).not.toContain("/gstack/review");
  });

  it("a plan too long for the channel is cut, the link kept whole", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 300, max: 4000 }),
        fc.integer({ min: 400, max: 2000 }),
        (planLines, limit) => {
          const summary = Array.from({ length: planLines }, (_, i) => `${i + 1}. step ${i}`).join("\n");
          const text = personAwaitingMessage({ notice: notice({ summary }), link: LINK, limit });
          expect([...text].length).toBeLessThanOrEqual(limit);
          expect(text).toContain(`Read the plan and answer: ${LINK}\n(dispatch 314c25ea)`);
        },
      ),
      { numRuns: 30 },
    );
  });
});
