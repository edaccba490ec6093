import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ActivityError } from "./activity-error";
import { formatDuration, parseDuration } from "./duration-text";

describe("durations", () => {
  it("writes hours, minutes and seconds without zero parts", () => {
    expect(formatDuration(0)).toBe("0s");
    expect(formatDuration(45)).toBe("45s");
    expect(formatDuration(3600)).toBe("1h");
    expect(formatDuration(3930)).toBe("1h 5m 30s");
    expect(formatDuration(3930, { round: "minute" })).toBe("1h 6m");
    expect(formatDuration(59, { round: "minute" })).toBe("59s");
  });

  it("reads seconds and unit forms", () => {
    expect(parseDuration("90")).toBe(90);
    expect(parseDuration("1h30m")).toBe(5400);
    expect(parseDuration("1h 5m 30s")).toBe(3930);
    expect(parseDuration("45s")).toBe(45);
    expect(parseDuration("2m")).toBe(120);
  });

  it("refuses what is not a duration", () => {
    for (const bad of ["", "abc", "-5", "1.5h", "5 minutes", "m", "1d"]) {
      expect(() => parseDuration(bad), bad).toThrow(ActivityError);
    }
  });

  it("round-trips every whole number of seconds", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000 }), (seconds) => {
        expect(parseDuration(formatDuration(seconds))).toBe(seconds);
        expect(parseDuration(String(seconds))).toBe(seconds);
      }),
    );
  });
});
