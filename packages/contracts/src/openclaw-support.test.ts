import { readFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  judgeOpenClaw,
  NEWEST_TESTED_OPENCLAW,
  OLDEST_TESTED_OPENCLAW,
  openclawVersionIn,
  SUPPORTED_OPENCLAW_RANGE,
  TESTED_OPENCLAW_TEXT,
  TESTED_OPENCLAW_VERSIONS,
} from "./openclaw-support";

const repository = join(import.meta.dirname, "..", "..", "..");

const release = fc.tuple(fc.nat(3000), fc.nat(40), fc.nat(40));
const asText = ([major, minor, patch]: [number, number, number]) => `${major}.${minor}.${patch}`;
const suffix = fc.oneof(
  fc.constant(""),
  fc.constantFrom("-beta.1", "-rc.2", "-alpha.3", "-1", "-2"),
  fc.stringMatching(/^-[0-9A-Za-z]{1,6}(\.[0-9A-Za-z]{1,4})?$/),
);

function isOlder([major, minor, patch]: [number, number, number]): boolean {
  const [a = 0, b = 0, c = 0] = OLDEST_TESTED_OPENCLAW.split(".").map(Number);
  return major !== a ? major < a : minor !== b ? minor < b : patch < c;
}

describe("the tested OpenClaw versions", () => {
  it("are x.y.z releases, each once, and the range names exactly them", () => {
    expect(TESTED_OPENCLAW_VERSIONS.length).toBeGreaterThan(0);
    expect(new Set(TESTED_OPENCLAW_VERSIONS).size).toBe(TESTED_OPENCLAW_VERSIONS.length);
    for (const version of TESTED_OPENCLAW_VERSIONS) expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(SUPPORTED_OPENCLAW_RANGE.split(" || ")).toEqual([...TESTED_OPENCLAW_VERSIONS]);
    expect(SUPPORTED_OPENCLAW_RANGE).not.toMatch(/[<>^~*x]/);
    expect(TESTED_OPENCLAW_TEXT.split(", ")).toEqual([...TESTED_OPENCLAW_VERSIONS]);
    expect(TESTED_OPENCLAW_VERSIONS).toContain(OLDEST_TESTED_OPENCLAW);
    expect(TESTED_OPENCLAW_VERSIONS).toContain(NEWEST_TESTED_OPENCLAW);
  });

  it("are the rows of COMPATIBILITY.md's table of OpenClaw versions tested, newest first", async () => {
    const text = await readFile(join(repository, "COMPATIBILITY.md"), "utf8");
    const section = text.split(/^## /m).find((part) => part.startsWith("OpenClaw versions tested"));
    expect(section, "COMPATIBILITY.md has a section 'OpenClaw versions tested'").toBeDefined();
    const rows = [...(section ?? "").matchAll(/^\| *(\d+\.\d+\.\d+) *\| *(\d{4}-\d{2}-\d{2}) *\|/gm)];
    expect(rows.map((row) => row[1])).toEqual(
      [...TESTED_OPENCLAW_VERSIONS].sort((left, right) =>
        right.localeCompare(left, undefined, { numeric: true }),
      ),
    );
  });
});

describe("judgeOpenClaw", () => {
  it("calls every tested version tested, with a leading v or build metadata too", () => {
    for (const version of TESTED_OPENCLAW_VERSIONS) {
      expect(judgeOpenClaw(version)).toEqual({ standing: "tested", version });
      expect(judgeOpenClaw(` v${version}+build.7 `).standing).toBe("tested");
    }
  });

  it("calls any other version older when its release is below the oldest tested, untested otherwise", () => {
    fc.assert(
      fc.property(release, suffix, (parts, tail) => {
        const version = `${asText(parts)}${tail}`;
        const judged = judgeOpenClaw(version);
        if (tail === "" && TESTED_OPENCLAW_VERSIONS.includes(version)) {
          expect(judged.standing).toBe("tested");
        } else {
          expect(judged).toEqual({ standing: isOlder(parts) ? "older" : "untested", version });
        }
      }),
    );
  });

  it("never calls a pre-release or correction of a tested version tested", () => {
    for (const version of TESTED_OPENCLAW_VERSIONS) {
      expect(judgeOpenClaw(`${version}-beta.1`).standing).toBe("untested");
      expect(judgeOpenClaw(`${version}-1`).standing).toBe("untested");
    }
  });

  it("calls a missing or unreadable version unknown", () => {
    for (const value of [undefined, null, 2026, "", "   ", "unknown", "2026.9", "2026.9.6.1", "latest"]) {
      expect(judgeOpenClaw(value).standing).toBe("unknown");
    }
    expect(judgeOpenClaw("unknown")).toEqual({ standing: "unknown", version: "unknown" });
  });
});

describe("openclawVersionIn", () => {
  it("reads the version `openclaw --version` prints", () => {
    expect(openclawVersionIn("OpenClaw 2026.9.6 (eb377ac)\n")).toBe("2026.9.6");
    expect(openclawVersionIn("OpenClaw 2026.10.5-beta.1 (0a1b2c3)")).toBe("2026.10.5-beta.1");
    expect(openclawVersionIn("2026.9.7")).toBe("2026.9.7");
    expect(openclawVersionIn("OpenClaw (unknown build)")).toBeUndefined();
    expect(openclawVersionIn("OpenClaw 1.2.3.4")).toBeUndefined();
  });

  it("gives back any version it is shown inside such a line, and its judgement with it", () => {
    fc.assert(
      fc.property(release, suffix, fc.stringMatching(/^[0-9a-f]{7}$/), (parts, tail, commit) => {
        const version = `${asText(parts)}${tail}`;
        const read = openclawVersionIn(`OpenClaw ${version} (${commit})\n`);
        expect(read).toBe(version);
        expect(judgeOpenClaw(read)).toEqual(judgeOpenClaw(version));
      }),
    );
  });
});
