import { describe, expect, it } from "vitest";
import type { LearningEntry, LocatedLearning } from "./learning-entry";
import { countsAcrossProjects, effectiveConfidence, latestPerIdentity } from "./reading-rules";

const now = new Date("2026-11-22T00:00:00Z");
const daysAgo = (days: number) => new Date(now.getTime() - days * 86_400_000).toISOString();

describe("effectiveConfidence", () => {
  it("takes one point per full 30 days from observed and inferred learnings", () => {
    expect(effectiveConfidence({ confidence: 8, source: "observed", ts: daysAgo(29) }, now)).toBe(8);
    expect(effectiveConfidence({ confidence: 8, source: "observed", ts: daysAgo(30) }, now)).toBe(7);
    expect(effectiveConfidence({ confidence: 8, source: "inferred", ts: daysAgo(95) }, now)).toBe(5);
  });

  it("floors at 0 like gstack, so a long-stale guess ranks last", () => {
    expect(effectiveConfidence({ confidence: 3, source: "observed", ts: daysAgo(3650) }, now)).toBe(0);
  });

  it("does not decay what the user said, cross-model findings, undated or future entries", () => {
    expect(effectiveConfidence({ confidence: 9, source: "user-stated", ts: daysAgo(900) }, now)).toBe(9);
    expect(effectiveConfidence({ confidence: 9, source: "cross-model", ts: daysAgo(900) }, now)).toBe(9);
    expect(effectiveConfidence({ confidence: 9, source: "observed" }, now)).toBe(9);
    expect(effectiveConfidence({ confidence: 9, source: "observed", ts: daysAgo(-400) }, now)).toBe(9);
  });

  it("assumes 5 when an old line has no confidence", () => {
    expect(effectiveConfidence({}, now)).toBe(5);
  });
});

function located(line: number, entry: Partial<LearningEntry>): LocatedLearning {
  return { file: "f", line, entry: { type: "pitfall", key: "k", insight: "", ...entry } as LearningEntry };
}

describe("latestPerIdentity", () => {
  it("keeps the last line per key|type", () => {
    const result = latestPerIdentity([
      located(1, { insight: "first" }),
      located(2, { type: "tool", insight: "other type" }),
      located(3, { insight: "second" }),
    ]);
    expect(result.map((item) => item.entry.insight)).toEqual(["second", "other type"]);
  });

  it("does not let a later line with an older timestamp undo a newer one", () => {
    const result = latestPerIdentity([
      located(1, { insight: "new", ts: "2026-11-20T00:00:00Z" }),
      located(2, { insight: "copied old", ts: "2026-01-01T00:00:00Z" }),
    ]);
    expect(result.map((item) => item.entry.insight)).toEqual(["new"]);
  });
});

describe("countsAcrossProjects", () => {
  it("counts only entries explicitly trusted", () => {
    expect(countsAcrossProjects({ trusted: true })).toBe(true);
    expect(countsAcrossProjects({ trusted: false })).toBe(false);
    expect(countsAcrossProjects({})).toBe(false);
  });
});
