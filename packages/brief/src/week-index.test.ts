import { appendFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createActivityLog, sortByTime } from "@gstack/activity";
import { type ActivityEntry, gstackLayout, isoWeekOf } from "@gstack/contracts";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { recentSessions } from "./recent-sessions";
import { projectsOfWeek } from "./week-index";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "brief-index-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const now = new Date("2026-11-27T09:00:00Z");

describe("projectsOfWeek", () => {
  it("names the projects of plain lines, and gives up on a line it cannot read plainly", () => {
    expect(projectsOfWeek('{"ts":"x","project":"b"}\n{"project": "a","ts":"y"}\n\n')).toEqual(["a", "b"]);
    expect(projectsOfWeek('{"project":"a"}\n{"pro\\u006aect":"b"}\n')).toBeNull();
    expect(projectsOfWeek('{"project":"a"}\nbroken\n')).toBeNull();
  });
});

describe("the week index", () => {
  it("finds what a full read finds, before and after more work is appended (and lines written by hand)", async () => {
    const start = Date.parse("2026-06-01T00:00:00Z");
    const entry = fc.record({
      offsetHours: fc.integer({ min: 0, max: 24 * 7 * 20 }),
      project: fc.constantFrom("p", "q", "r"),
      byHand: fc.boolean(),
    });
    const layout = gstackLayout(root);
    await fc.assert(
      fc.asyncProperty(
        fc.array(entry, { maxLength: 25 }),
        fc.array(entry, { maxLength: 10 }),
        fc.constantFrom("p", "q", "r"),
        fc.integer({ min: 1, max: 4 }),
        async (first, later, project, count) => {
          await rm(layout.activity.dir, { recursive: true, force: true });
          const seen = new Set<number>();
          const write = async (items: typeof first) => {
            const entries: ActivityEntry[] = [];
            for (const item of items) {
              if (seen.has(item.offsetHours)) continue;
              seen.add(item.offsetHours);
              const value = {
                ts: new Date(start + item.offsetHours * 3_600_000).toISOString(),
                project: item.project,
                skill: "ship",
                duration: 1,
              };
              if (item.byHand) {
                // Another writer's spacing, and an escape the index cannot read plainly.
                await mkdir(layout.activity.dir, { recursive: true });
                const text = JSON.stringify(value, null, 1)
                  .replaceAll("\n", "")
                  .replace('"ship"', '"s\\u0068ip"');
                await appendFile(layout.activity.week(isoWeekOf(new Date(value.ts))), `${text}\n`);
              } else entries.push(value);
            }
            if (entries.length > 0)
              await createActivityLog({ root, now: () => now }).append(entries, { backfill: true });
          };
          const full = async () =>
            sortByTime((await createActivityLog({ root, now: () => now }).query({ project })).entries)
              .reverse()
              .slice(0, count)
              .map((item) => item.ts);
          await write(first);
          expect((await recentSessions(root, project, count, now)).sessions.map((item) => item.ts)).toEqual(
            await full(),
          );
          await write(later);
          expect((await recentSessions(root, project, count, now)).sessions.map((item) => item.ts)).toEqual(
            await full(),
          );
          expect((await recentSessions(root, project, count, now)).sessions.map((item) => item.ts)).toEqual(
            await full(),
          );
        },
      ),
      { numRuns: 40 },
    );
  });
});
