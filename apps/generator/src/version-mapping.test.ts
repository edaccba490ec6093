import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareSemver, fromSemver, MICRO_LIMIT, parseGstackVersion, toSemver } from "./version-mapping";

const fourPart = fc
  .tuple(
    fc.integer({ min: 0, max: 500 }),
    fc.integer({ min: 0, max: 500 }),
    fc.integer({ min: 0, max: 100_000 }),
    fc.integer({ min: 0, max: MICRO_LIMIT - 1 }),
  )
  .map((parts) => parts.join("."));

function compareFourPart(left: string, right: string): number {
  const a = left.split(".").map(Number);
  const b = right.split(".").map(Number);
  for (let index = 0; index < 4; index++) {
    if (a[index] !== b[index]) return Math.sign(a[index]! - b[index]!);
  }
  return 0;
}

describe("gstack version to semver", () => {
  it("maps the documented examples", () => {
    expect(toSemver("1.68.3.0")).toBe("1.68.3000");
    expect(toSemver("1.68.3.2")).toBe("1.68.3002");
    expect(toSemver("1.68.3.12")).toBe("1.68.3012");
    expect(toSemver(" 0.15.2.0\n")).toBe("0.15.2000");
  });

  it("sorts 1.68.3.12 after 1.68.3.2 and every 1.68.4.x after every 1.68.3.x", () => {
    expect(compareSemver(toSemver("1.68.3.12"), toSemver("1.68.3.2"))).toBe(1);
    expect(compareSemver(toSemver("1.68.4.0"), toSemver("1.68.3.999"))).toBe(1);
  });

  it("keeps the order of any two versions", () => {
    fc.assert(
      fc.property(fourPart, fourPart, (left, right) => {
        expect(compareSemver(toSemver(left), toSemver(right))).toBe(compareFourPart(left, right));
      }),
    );
  });

  it("reads back without loss", () => {
    fc.assert(
      fc.property(fourPart, (version) => {
        expect(fromSemver(toSemver(version))).toBe(version);
      }),
    );
  });

  it("refuses what it cannot map, naming the rule", () => {
    expect(() => parseGstackVersion("1.68.3")).toThrow(/not a four-part gstack version/);
    expect(() => parseGstackVersion("1.68.3.01")).toThrow(/not a four-part/);
    expect(() => toSemver("1.68.3.1000")).toThrow(/must be below 1000/);
    expect(() => fromSemver("1.2.3-beta")).toThrow(/not a plain semver/);
  });
});
