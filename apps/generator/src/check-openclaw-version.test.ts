import { describe, expect, it } from "vitest";
import { fixtureSources } from "./__fixtures__/fixtures";
import { compareDottedVersions, findVersionMismatches } from "./check-openclaw-version";
import { generateBundle } from "./generate-bundle";

describe("min_openclaw_version", () => {
  const bundle = generateBundle(fixtureSources());

  it("compares dotted versions numerically", () => {
    expect(compareDottedVersions("2026.10.0", "2026.3.0")).toBe(1);
    expect(compareDottedVersions("2026.3", "2026.3.0")).toBe(0);
    expect(compareDottedVersions("v2026.2.9", "2026.3.0")).toBe(-1);
  });

  it("flags the skills that need a newer OpenClaw than the one running", () => {
    expect(findVersionMismatches(bundle, "2026.2.1")).toEqual([
      { skill: "gstack-qa", requires: "2026.3.0", running: "2026.2.1" },
    ]);
    expect(findVersionMismatches(bundle, "2026.3.0")).toEqual([]);
  });
});
