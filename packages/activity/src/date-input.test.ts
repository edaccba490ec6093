import { describe, expect, it } from "vitest";
import { ActivityError } from "./activity-error";
import { parseDateBound } from "./date-input";

describe("date bounds", () => {
  it("reads days as whole UTC days", () => {
    expect(parseDateBound("2026-04-01", "start").toISOString()).toBe("2026-04-01T00:00:00.000Z");
    expect(parseDateBound("2026-04-07", "end").toISOString()).toBe("2026-04-08T00:00:00.000Z");
  });

  it("reads weeks as whole ISO weeks", () => {
    expect(parseDateBound("2026-W53", "start").toISOString()).toBe("2026-12-28T00:00:00.000Z");
    expect(parseDateBound("2026-W53", "end").toISOString()).toBe("2027-01-04T00:00:00.000Z");
  });

  it("takes timestamps with a zone as they are", () => {
    expect(parseDateBound("2026-04-01T09:30:00+02:00", "end").toISOString()).toBe("2026-04-01T07:30:00.000Z");
  });

  it("refuses impossible and ambiguous dates", () => {
    for (const bad of [
      "2026-02-30",
      "2026-13-01",
      "yesterday",
      "2026-04-01T09:30",
      "2025-W53",
      "04/01/2026",
    ]) {
      expect(() => parseDateBound(bad, "start"), bad).toThrow(ActivityError);
    }
  });
});
