import type { ActivityEntry } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatShipReport } from "./activity-report";
import { summarizeActivity } from "./activity-summary";

const entry = (fields: Partial<ActivityEntry>): ActivityEntry => ({
  ts: "2026-04-01T10:00:00Z",
  project: "acme-widget",
  skill: "ship",
  duration: 600,
  ...fields,
});

const week = [
  entry({ session: "s1", skill: "review", duration: 1800, outcome: "success", branch: "feat/login" }),
  entry({
    session: "s1",
    skill: "ship",
    duration: 600,
    outcome: "success",
    artifacts: ["pr:47", "commit:abc1234def", "learnings:2"],
  }),
  entry({ session: "s2", skill: "ship", duration: 300, outcome: "failed", dispatch: "wintermute" }),
  entry({
    project: "baku",
    skill: "qa",
    duration: 120,
    artifacts: ["commit:fff0001", "pr:#52", "report:qa.md"],
  }),
  entry({ project: "baku", skill: "qa", duration: 60, ts: "2026-04-03T09:00:00+02:00" }),
];

describe("summarizeActivity", () => {
  it("counts sessions, time, runs per skill, artifacts and outcomes per project", () => {
    const summary = summarizeActivity(week);
    expect(summary.entries).toBe(5);
    expect(summary.sessions).toBe(4);
    expect(summary.duration).toBe(2880);
    expect(summary.artifacts).toEqual({
      pullRequests: ["47", "52"],
      commits: ["abc1234def", "fff0001"],
      learnings: 2,
      other: ["report:qa.md"],
    });
    const [acme, baku] = summary.projects;
    expect(acme).toMatchObject({
      project: "acme-widget",
      entries: 3,
      sessions: 2,
      duration: 2700,
      outcomes: { success: 2, failed: 1 },
      branches: ["feat/login"],
      dispatchers: { wintermute: 1 },
    });
    expect(acme?.skills).toEqual([
      { skill: "review", runs: 1, duration: 1800 },
      { skill: "ship", runs: 2, duration: 900 },
    ]);
    expect(baku).toMatchObject({ project: "baku", sessions: 2, lastActive: "2026-04-03T09:00:00+02:00" });
  });

  it("keeps totals equal to the sum of the projects for any entries", () => {
    const anyEntry = fc.record({
      ts: fc
        .date({ min: new Date("2026-01-01Z"), max: new Date("2026-12-31Z"), noInvalidDate: true })
        .map((date) => date.toISOString()),
      project: fc.constantFrom("a", "b", "c"),
      skill: fc.constantFrom("ship", "review"),
      duration: fc.nat({ max: 10_000 }),
      session: fc.option(fc.constantFrom("s1", "s2", "s3"), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(anyEntry, { maxLength: 40 }), (entries) => {
        const clean = entries.map(({ session, ...rest }) => (session ? { ...rest, session } : rest));
        const summary = summarizeActivity(clean);
        expect(summary.duration).toBe(clean.reduce((total, item) => total + item.duration, 0));
        expect(summary.projects.reduce((total, project) => total + project.entries, 0)).toBe(clean.length);
        expect(summary.spend.priced + summary.spend.unpriced).toBe(clean.length);
        for (const project of summary.projects) {
          expect(project.skills.reduce((total, skill) => total + skill.runs, 0)).toBe(project.entries);
          expect(project.sessions).toBeLessThanOrEqual(project.entries);
        }
      }),
    );
  });
});

describe("formatShipReport", () => {
  it("reads as the answer to what was shipped", () => {
    const text = formatShipReport(summarizeActivity(week), "2026-W14 (Mon 30 Mar 2026 – Sun 5 Apr 2026)");
    expect(text).toBe(
      [
        "Shipped in 2026-W14 (Mon 30 Mar 2026 – Sun 5 Apr 2026)",
        "4 sessions · 48m · 2 projects · PRs #47, #52 · 2 commits (abc1234, fff0001)",
        "",
        "acme-widget — 2 sessions, 45m",
        "  review ×1 (30m) · ship ×2 (15m)",
        "  shipped: PR #47 · 1 commit (abc1234) · 2 learnings",
        "  outcomes: 2 success, 1 failed · branches: feat/login · dispatched by wintermute ×1",
        "",
        "baku — 2 sessions, 3m",
        "  qa ×2 (3m)",
        "  shipped: PR #52 · 1 commit (fff0001) · report:qa.md",
      ].join("\n"),
    );
  });

  it("says what the work cost, in total, per project and per week", () => {
    const priced = [
      entry({ session: "a", cost_usd: 1.25 }),
      entry({ session: "b", cost_usd: 0.5, ts: "2026-04-08T10:00:00Z" }),
      entry({ session: "c" }),
      entry({ project: "baku", session: "d", cost_usd: 0.004 }),
    ];
    const summary = summarizeActivity(priced);
    expect(summary.spend).toEqual({ costUsd: 1.754, priced: 3, unpriced: 1 });
    expect(summary.spendByWeek).toEqual([
      { week: "2026-W14", costUsd: 1.254, priced: 2 },
      { week: "2026-W15", costUsd: 0.5, priced: 1 },
    ]);
    expect(summary.projects.map((project) => [project.project, project.spend.costUsd])).toEqual([
      ["acme-widget", 1.75],
      ["baku", 0.004],
    ]);
    const text = formatShipReport(summary, "2026-W14 – 2026-W15");
    expect(text.split("\n").slice(0, 3)).toEqual([
      "Shipped in 2026-W14 – 2026-W15",
      "4 sessions · 40m · 2 projects · $1.75 spent (1 without a cost)",
      "spend per week: 2026-W14 $1.25 · 2026-W15 $0.50",
    ]);
    expect(text).toContain("  $1.75 spent (1 without a cost)");
    expect(text).toContain("  $0.004 spent");
  });

  it("says so when nothing was recorded", () => {
    expect(formatShipReport(summarizeActivity([]), "2026-W14")).toBe("Nothing recorded in 2026-W14.");
  });
});
