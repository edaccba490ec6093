import { parseJsonLines, type TimelineEvent } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entryIdentity } from "./entry-identity";
import { timelineToEntries } from "./timeline-entries";

const located = (events: TimelineEvent[]) => events.map((event, index) => ({ event, line: index + 1 }));

describe("timelineToEntries", () => {
  it("turns completed events into valid activity entries for the folder's project", () => {
    const text = [
      '{"skill":"ship","event":"started","branch":"main","session":"s1","ts":"2026-04-01T10:00:00Z"}',
      '{"skill":"ship","event":"completed","branch":"main","outcome":"success","duration_s":"312","session":"s1","ts":"2026-04-01T10:05:12Z"}',
    ].join("\n");
    const { entries: events } = parseJsonLines("timeline-event", text);
    const result = timelineToEntries(
      "acme-widget",
      events.map((item) => ({ event: item.value, line: item.line })),
    );
    expect(result.problems).toEqual([]);
    expect(result.entries).toEqual([
      {
        line: 2,
        entry: {
          ts: "2026-04-01T10:05:12Z",
          project: "acme-widget",
          skill: "ship",
          duration: 312,
          source: "timeline",
          branch: "main",
          outcome: "success",
          session: "s1",
        },
      },
    ]);
  });

  it("derives a missing duration from the started event, else uses 0, and drops empty fields", () => {
    const result = timelineToEntries(
      "baku",
      located([
        { skill: "qa", event: "started", session: "s2", ts: "2026-04-01T10:00:00Z" },
        { skill: "qa", event: "completed", session: "s2", branch: "", ts: "2026-04-01T10:01:30Z" },
        { skill: "review", event: "completed", ts: "2026-04-01T11:00:00Z", outcome: "" },
      ]),
    );
    expect(result.entries.map((item) => item.entry)).toEqual([
      {
        ts: "2026-04-01T10:01:30Z",
        project: "baku",
        skill: "qa",
        duration: 90,
        source: "timeline",
        session: "s2",
      },
      { ts: "2026-04-01T11:00:00Z", project: "baku", skill: "review", duration: 0, source: "timeline" },
    ]);
  });

  it("reports an entry the activity schema refuses by its line, without losing the others", () => {
    const result = timelineToEntries(
      "not a slug!",
      located([{ skill: "ship", event: "completed", ts: "2026-04-01T11:00:00Z" }]),
      { source: "/x/timeline.jsonl" },
    );
    expect(result.entries).toEqual([]);
    expect(result.problems[0]?.line).toBe(1);
    expect(result.problems[0]?.message).toMatch(/\/x\/timeline.jsonl:1.*project/);
  });

  it("gives the same identity to the same event however often it is converted", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("ship", "review", "qa"),
        fc.option(fc.string({ minLength: 1, maxLength: 8 }), { nil: undefined }),
        fc.date({ min: new Date("2020-01-01Z"), max: new Date("2030-01-01Z"), noInvalidDate: true }),
        fc.nat({ max: 100_000 }),
        (skill, session, date, seconds) => {
          const event: TimelineEvent = {
            skill,
            event: "completed",
            ts: date.toISOString(),
            duration_s: String(seconds),
            ...(session ? { session } : {}),
          };
          const first = timelineToEntries("p", located([event])).entries[0]!.entry;
          const second = timelineToEntries("p", located([event])).entries[0]!.entry;
          expect(first.duration).toBe(seconds);
          expect(entryIdentity(first)).toBe(entryIdentity(second));
          const shifted = { ...first, ts: date.toISOString().replace("Z", "+00:00") };
          expect(entryIdentity(shifted)).toBe(entryIdentity(first));
        },
      ),
    );
  });
});
