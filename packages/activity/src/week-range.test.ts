import { isoWeekOf } from "@gstack/contracts";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ActivityError } from "./activity-error";
import {
  assertWeekLabel,
  lastWeeks,
  shiftWeek,
  weekEnd,
  weekStart,
  weeksBetween,
  weeksOverlapping,
} from "./week-range";

const instant = fc.date({
  min: new Date("1990-01-01T00:00:00Z"),
  max: new Date("2090-12-31T23:59:59Z"),
  noInvalidDate: true,
});
const label = instant.map((date) => isoWeekOf(date));

describe("week ranges", () => {
  it("knows the ISO year boundaries", () => {
    expect(weekStart("2026-W53").toISOString()).toBe("2026-12-28T00:00:00.000Z");
    expect(weekEnd("2026-W53").toISOString()).toBe("2027-01-04T00:00:00.000Z");
    expect(weekStart("2025-W01").toISOString()).toBe("2024-12-30T00:00:00.000Z");
    expect(weeksBetween("2026-W52", "2027-W02")).toEqual(["2026-W52", "2026-W53", "2027-W01", "2027-W02"]);
    expect(weeksBetween("2024-W52", "2025-W01")).toEqual(["2024-W52", "2025-W01"]);
  });

  it("refuses labels that are not weeks", () => {
    for (const bad of ["2026-W54", "2025-W53", "2026-14", "2026-W00", "26-W14", ""]) {
      expect(() => assertWeekLabel(bad)).toThrow(ActivityError);
    }
    expect(assertWeekLabel("2026-W53")).toBe("2026-W53");
  });

  it("puts every instant inside the span of its own week", () => {
    fc.assert(
      fc.property(instant, (date) => {
        const week = isoWeekOf(date);
        expect(weekStart(week).getTime()).toBeLessThanOrEqual(date.getTime());
        expect(weekEnd(week).getTime()).toBeGreaterThan(date.getTime());
        expect(weekStart(week).getUTCDay()).toBe(1);
      }),
    );
  });

  it("round-trips a week through its start instant", () => {
    fc.assert(
      fc.property(label, (week) => {
        expect(isoWeekOf(weekStart(week))).toBe(week);
      }),
    );
  });

  it("shifts forward and back to the same week", () => {
    fc.assert(
      fc.property(label, fc.integer({ min: -600, max: 600 }), (week, delta) => {
        expect(shiftWeek(shiftWeek(week, delta), -delta)).toBe(week);
        expect(weeksBetween(week, shiftWeek(week, Math.abs(delta)))).toHaveLength(Math.abs(delta) + 1);
      }),
    );
  });

  it("lists consecutive weeks between two labels, and a range of weeks converts back to its ends", () => {
    fc.assert(
      fc.property(label, fc.integer({ min: 0, max: 300 }), (from, length) => {
        const to = shiftWeek(from, length);
        const weeks = weeksBetween(from, to);
        expect(weeks).toHaveLength(length + 1);
        expect(weeksBetween(to, from)).toEqual(length === 0 ? [from] : []);
        expect(weeks[0]).toBe(from);
        expect(weeks.at(-1)).toBe(to);
        for (let index = 1; index < weeks.length; index++) {
          expect(shiftWeek(weeks[index - 1]!, 1)).toBe(weeks[index]);
        }
        expect(weeksOverlapping(weekStart(from), weekEnd(to))).toEqual(weeks);
      }),
    );
  });

  it("covers every instant of a date range with the overlapping weeks", () => {
    fc.assert(
      fc.property(
        instant,
        fc.integer({ min: 1, max: 400 * 86_400_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (since, length, at) => {
          const until = new Date(since.getTime() + length);
          const inside = new Date(since.getTime() + Math.floor(at * (length - 1)));
          const weeks = weeksOverlapping(since, until);
          expect(weeks).toContain(isoWeekOf(inside));
          expect(weeks[0]).toBe(isoWeekOf(since));
        },
      ),
      { numRuns: 80 },
    );
  });

  it("counts the last N weeks including the current one", () => {
    expect(lastWeeks(new Date("2027-01-02T12:00:00Z"), 3)).toEqual(["2026-W51", "2026-W52", "2026-W53"]);
    expect(() => lastWeeks(new Date(), 0)).toThrow(/at least 1/);
  });
});
