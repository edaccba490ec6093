import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createActivityLog, sortByTime } from "@gstack/activity";
import { type ActivityEntry, gstackLayout, isoWeekOf } from "@gstack/contracts";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { recentSessions } from "./recent-sessions";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "brief-sessions-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const now = new Date("2026-11-27T09:00:00Z");

async function seed(entries: ActivityEntry[]): Promise<void> {
  await createActivityLog({ root, now: () => now }).append(entries, { backfill: true });
}

describe("recentSessions", () => {
  it("joins both runtimes newest first: the activity index and gstack's own timeline, each session once", async () => {
    await seed([
      {
        ts: "2026-11-20T10:00:00Z",
        project: "acme-baku",
        skill: "ship",
        duration: 600,
        source: "daemon",
        artifacts: ["pr:47", "learnings:2"],
        outcome: "success",
        cost_usd: 1.25,
        dispatch_id: "dispatch-a",
      },
      {
        ts: "2026-11-25T10:00:00Z",
        project: "acme-baku",
        skill: "review",
        duration: 300,
        source: "timeline",
        session: "s1",
      },
      { ts: "2026-11-26T10:00:00Z", project: "other", skill: "ship", duration: 60 },
    ]);
    const timeline = gstackLayout(root).project("acme-baku").timeline;
    await mkdir(join(timeline, ".."), { recursive: true });
    await writeFile(
      timeline,
      [
        { skill: "review", event: "completed", session: "s1", ts: "2026-11-25T10:00:00Z", duration_s: "300" },
        { skill: "investigate", event: "started", session: "s2", ts: "2026-11-26T17:00:00Z" },
        {
          skill: "investigate",
          event: "completed",
          session: "s2",
          ts: "2026-11-26T17:30:00Z",
          branch: "fix/auth",
          outcome: "unknown",
        },
      ]
        .map((line) => JSON.stringify(line))
        .join("\n"),
    );
    const { sessions, problems } = await recentSessions(root, "acme-baku", 5, now);
    expect(problems).toBe(0);
    expect(sessions).toEqual([
      {
        ts: "2026-11-26T17:30:00Z",
        skill: "investigate",
        runtime: "claude-code",
        outcome: "unknown",
        branch: "fix/auth",
        shipped: [],
        durationSeconds: 1800,
      },
      {
        ts: "2026-11-25T10:00:00Z",
        skill: "review",
        runtime: "claude-code",
        shipped: [],
        durationSeconds: 300,
      },
      {
        ts: "2026-11-20T10:00:00Z",
        skill: "ship",
        runtime: "daemon",
        outcome: "success",
        shipped: ["pr:47"],
        durationSeconds: 600,
        costUsd: 1.25,
        dispatchId: "dispatch-a",
      },
    ]);
  });

  it("never opens a week older than it needs", async () => {
    await seed([
      { ts: "2026-11-25T10:00:00Z", project: "p", skill: "a", duration: 1 },
      { ts: "2026-11-24T10:00:00Z", project: "p", skill: "b", duration: 1 },
    ]);
    // A broken old week would be reported if it were read.
    await writeFile(gstackLayout(root).activity.week("2026-W10"), '{"project":"p", broken\n');
    const read = await recentSessions(root, "p", 2, now);
    expect(read.sessions.map((session) => session.skill)).toEqual(["a", "b"]);
    expect(read.problems).toBe(0);
    const deeper = await recentSessions(root, "p", 3, now);
    expect(deeper.problems).toBe(1);
  });

  it("judges as a full read of every week does (newest weeks first, stopping early)", async () => {
    const start = Date.parse("2026-01-05T00:00:00Z");
    const entry = fc.record({
      offsetHours: fc.integer({ min: 0, max: 24 * 7 * 40 }),
      project: fc.constantFrom("p", "q", "r"),
      skill: fc.constantFrom("ship", "review", "qa"),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(entry, { maxLength: 40 }),
        fc.integer({ min: 1, max: 6 }),
        async (items, count) => {
          await rm(gstackLayout(root).activity.dir, { recursive: true, force: true });
          // Distinct times, so "newest" has one answer.
          const seen = new Set<number>();
          const entries: ActivityEntry[] = [];
          for (const item of items) {
            if (seen.has(item.offsetHours)) continue;
            seen.add(item.offsetHours);
            entries.push({
              ts: new Date(start + item.offsetHours * 3_600_000).toISOString(),
              project: item.project,
              skill: item.skill,
              duration: 1,
            });
          }
          if (entries.length > 0) await seed(entries);
          const full = sortByTime(
            (await createActivityLog({ root, now: () => now }).query({ project: "p" })).entries,
          )
            .reverse()
            .slice(0, count);
          const fast = await recentSessions(root, "p", count, now);
          expect(fast.sessions.map((session) => session.ts)).toEqual(full.map((item) => item.ts));
          for (const session of fast.sessions) expect(isoWeekOf(new Date(session.ts))).toMatch(/^2026-W/);
        },
      ),
      { numRuns: 40 },
    );
  });
});
