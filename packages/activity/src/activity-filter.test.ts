import type { ActivityEntry } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { linePrefilter, matchesFilter, sortByTime } from "./activity-filter";

const entry = (fields: Partial<ActivityEntry>): ActivityEntry => ({
  ts: "2026-04-01T10:00:00Z",
  project: "acme-widget",
  skill: "ship",
  duration: 60,
  ...fields,
});

describe("matchesFilter", () => {
  it("keeps entries matching every given field", () => {
    const filter = { project: "acme-widget", skill: "ship", dispatch: "wintermute" };
    expect(matchesFilter(entry({ dispatch: "wintermute" }), filter)).toBe(true);
    expect(matchesFilter(entry({}), filter)).toBe(false);
    expect(matchesFilter(entry({ dispatch: "wintermute", skill: "review" }), filter)).toBe(false);
    expect(matchesFilter(entry({}), {})).toBe(true);
  });

  it("treats since as inclusive and until as exclusive, across time zones", () => {
    const since = new Date("2026-04-01T10:00:00Z");
    const until = new Date("2026-04-02T00:00:00Z");
    expect(matchesFilter(entry({ ts: "2026-04-01T12:00:00+02:00" }), { since, until })).toBe(true);
    expect(matchesFilter(entry({ ts: "2026-04-01T11:59:59+02:00" }), { since, until })).toBe(false);
    expect(matchesFilter(entry({ ts: "2026-04-02T00:00:00Z" }), { since, until })).toBe(false);
  });
});

describe("linePrefilter", () => {
  const text = fc.string({ unit: "grapheme", maxLength: 12 });
  it("never rejects a line whose entry matches, however the line was written", () => {
    fc.assert(
      fc.property(text, text, fc.boolean(), fc.boolean(), (project, skill, escapeAll, spaced) => {
        const value = { ts: "2026-04-01T10:00:00Z", project, skill, duration: 1 };
        let line = spaced ? JSON.stringify(value, null, 1).replaceAll("\n", " ") : JSON.stringify(value);
        if (escapeAll) line = line.replace(/[a-z]/g, (letter) => `\\u00${letter.charCodeAt(0).toString(16)}`);
        const filter = { project, skill };
        if (matchesFilter(JSON.parse(line) as ActivityEntry, filter)) {
          expect(linePrefilter(filter)(line)).toBe(true);
        }
      }),
    );
  });

  it("rejects plain lines that lack a wanted value", () => {
    const accept = linePrefilter({ project: "baku" });
    expect(accept(JSON.stringify(entry({ project: "acme" })))).toBe(false);
    expect(accept(JSON.stringify(entry({ project: "baku" })))).toBe(true);
    expect(linePrefilter({})("anything")).toBe(true);
  });
});

describe("sortByTime", () => {
  it("orders by instant, not by text, and keeps ties in order", () => {
    const sorted = sortByTime([
      entry({ ts: "2026-04-01T10:00:00Z", skill: "b" }),
      entry({ ts: "2026-04-01T11:30:00+02:00", skill: "a" }),
      entry({ ts: "2026-04-01T10:00:00Z", skill: "c" }),
    ]);
    expect(sorted.map((item) => item.skill)).toEqual(["a", "b", "c"]);
  });
});
