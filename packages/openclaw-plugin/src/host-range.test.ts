import { readdir, readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import {
  judgeOpenClaw,
  NEWEST_TESTED_OPENCLAW,
  OLDEST_TESTED_OPENCLAW,
  SUPPORTED_OPENCLAW_RANGE,
  TESTED_OPENCLAW_TEXT,
  TESTED_OPENCLAW_VERSIONS,
} from "@gstack/contracts";
import { openclawPackageDir, openclawVersion as testbedOpenClaw } from "@gstack/openclaw-testbed";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { HOST_RANGE_MARK, hostRangeLine, logHostRangeOnce, runningOpenClaw } from "./host-range";

const packageDir = join(import.meta.dirname, "..");
const repository = join(packageDir, "..", "..");
const satisfies = (createRequire(import.meta.url)("semver") as { satisfies(v: string, r: string): boolean })
  .satisfies;

async function manifest(path: string) {
  return JSON.parse(await readFile(path, "utf8")) as {
    version: string;
    peerDependencies?: Record<string, string>;
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
    openclaw?: {
      compat?: { pluginApi?: string; minGatewayVersion?: string };
      build?: { openclawVersion?: string; pluginSdkVersion?: string };
    };
  };
}

/** Versions as OpenClaw writes them, and the pre-releases and corrections it also publishes. */
const version = fc
  .tuple(
    fc.oneof(fc.constantFrom(2025, 2026, 2027), fc.nat(3000)),
    fc.nat(13),
    fc.nat(40),
    fc.oneof(
      fc.constant(""),
      fc.constantFrom("-beta.1", "-rc.2", "-alpha.3", "-1", "-2"),
      fc.stringMatching(/^-[0-9A-Za-z]{1,6}$/),
    ),
  )
  .map(([year, month, day, suffix]) => `${year}.${month}.${day}${suffix}`);
const versionsNearTested = fc.oneof(
  version,
  fc.constantFrom(...TESTED_OPENCLAW_VERSIONS),
  fc
    .constantFrom(...TESTED_OPENCLAW_VERSIONS)
    .chain((tested) => fc.constantFrom(`${tested}-beta.1`, `${tested}-1`, `v${tested}`)),
);

describe("the line the plugin logs when it loads", () => {
  it("is nothing on a tested OpenClaw", () => {
    for (const tested of TESTED_OPENCLAW_VERSIONS) expect(hostRangeLine(tested)).toBeUndefined();
  });

  it("names the running version, the tested ones and the fix, in one line, on any other", () => {
    const line = hostRangeLine("2026.10.1");
    expect(line).toBe(
      `gstack: this plugin was tested with OpenClaw ${TESTED_OPENCLAW_TEXT}, not with OpenClaw 2026.10.1, which runs it now; it keeps running, but OpenClaw's plugin API changes between releases: if a gstack tool or report misbehaves, run OpenClaw ${NEWEST_TESTED_OPENCLAW} (npm install -g openclaw@${NEWEST_TESTED_OPENCLAW}) or a gstack plugin tested with 2026.10.1`,
    );
  });

  it("says so when OpenClaw does not say its version", () => {
    expect(hostRangeLine(undefined)).toBe(
      `${HOST_RANGE_MARK} ${TESTED_OPENCLAW_TEXT}, and this OpenClaw does not say which version it is (api.runtime.version is missing); it keeps running, and \`openclaw --version\` tells whether it is one of those`,
    );
    expect(hostRangeLine("unknown")).toContain('(api.runtime.version is "unknown")');
  });

  it("is one line, beginning with the mark, exactly for the versions that are not tested", () => {
    fc.assert(
      fc.property(versionsNearTested, (running) => {
        const line = hostRangeLine(running);
        if (judgeOpenClaw(running).standing === "tested") {
          expect(line).toBeUndefined();
        } else {
          expect(
            line?.startsWith(`${HOST_RANGE_MARK} ${TESTED_OPENCLAW_TEXT}, not with OpenClaw ${running},`),
          ).toBe(true);
          expect(line).not.toMatch(/[\n\r]/);
        }
      }),
    );
  });
});

describe("reading the running version", () => {
  it("reads api.runtime.version, and nothing in a registration whose runtime throws (the CLI's command metadata pass)", () => {
    expect(runningOpenClaw({ runtime: { version: "2026.9.6" } })).toEqual({ version: "2026.9.6" });
    const metadataOnly = {
      get runtime(): { version?: unknown } {
        throw new Error(
          'Plugin "gstack" runtime is intentionally unavailable during "cli-metadata" registration.',
        );
      },
    };
    expect(runningOpenClaw(metadataOnly)).toBeUndefined();
  });
});

describe("logging the line", () => {
  it("logs it once per process however often the plugin registers, and never on a tested OpenClaw", () => {
    const logged: string[] = [];
    const warn = (line: string) => logged.push(line);
    for (let registration = 0; registration < 3; registration++) {
      logHostRangeOnce(TESTED_OPENCLAW_VERSIONS[0], warn);
      logHostRangeOnce("2031.4.5", warn);
    }
    expect(logged).toEqual([hostRangeLine("2031.4.5")]);
    expect(logHostRangeOnce("2031.4.5", warn)).toBe(false);
    expect(logHostRangeOnce("2031.4.6", warn)).toBe(true);
    expect(logged).toHaveLength(2);
  });
});

describe("the declared OpenClaw range", () => {
  let plugin: Awaited<ReturnType<typeof manifest>>;
  let installed: string;
  beforeAll(async () => {
    plugin = await manifest(join(packageDir, "package.json"));
    installed = (await manifest(join(packageDir, "node_modules", "openclaw", "package.json"))).version;
  });

  it("is the tested versions, in peerDependencies, and the pluginApi floor is the oldest of them", () => {
    expect(plugin.peerDependencies?.openclaw).toBe(SUPPORTED_OPENCLAW_RANGE);
    expect(plugin.openclaw?.compat).toEqual({
      pluginApi: `>=${OLDEST_TESTED_OPENCLAW}`,
      minGatewayVersion: OLDEST_TESTED_OPENCLAW,
    });
  });

  it("holds the OpenClaw the tests install, which is the one the plugin is built against", async () => {
    const testbed = await manifest(join(repository, "packages", "openclaw-testbed", "package.json"));
    for (const [where, pinned] of [
      ["the plugin's devDependencies", plugin.devDependencies?.openclaw],
      ["openclaw-testbed's dependencies", testbed.dependencies?.openclaw],
    ] as const) {
      expect({ where, pinned, tested: TESTED_OPENCLAW_VERSIONS.includes(pinned ?? "") }).toEqual({
        where,
        pinned,
        tested: true,
      });
    }
    for (const [where, running] of [
      ["the plugin's node_modules", installed],
      ["openclaw-testbed's node_modules", testbedOpenClaw],
    ] as const) {
      expect({ where, running, standing: judgeOpenClaw(running).standing }).toEqual({
        where,
        running,
        standing: "tested",
      });
      expect(satisfies(running, plugin.peerDependencies?.openclaw ?? "")).toBe(true);
    }
    expect(plugin.openclaw?.build).toEqual({ openclawVersion: installed, pluginSdkVersion: installed });
  });

  it("is judged as npm judges the peerDependencies range", () => {
    fc.assert(
      fc.property(versionsNearTested, (running) => {
        expect(judgeOpenClaw(running).standing === "tested").toBe(
          satisfies(running, SUPPORTED_OPENCLAW_RANGE),
        );
      }),
    );
  });

  it("calls older exactly the releases the real OpenClaw refuses by the pluginApi floor", async () => {
    // The real OpenClaw's own check of openclaw.compat.pluginApi, which it applies when it
    // installs and when it discovers a plugin (a host outside is skipped: the plugin never loads).
    const dist = join(openclawPackageDir, "dist");
    const file = (await readdir(dist)).find((name) => /^package-compat-[\w-]+\.mjs$/.test(name));
    expect(file, `OpenClaw's package-compat module in ${dist}`).toBeDefined();
    const module = (await import(pathToFileURL(join(dist, file ?? "")).href)) as Record<string, unknown>;
    const openclawAccepts = Object.values(module).find(
      (value): value is (version: string, range: string) => boolean =>
        typeof value === "function" && value.name === "satisfiesPluginApiRange",
    );
    expect(openclawAccepts).toBeDefined();
    const floor = plugin.openclaw?.compat?.pluginApi ?? "";
    fc.assert(
      fc.property(versionsNearTested, (running) => {
        const older = judgeOpenClaw(running).standing === "older";
        // Older is never loaded; a plain release that is not older always is. (A pre-release of the
        // floor's own release OpenClaw accepts or not by its suffix; it is untested either way.)
        if (older) expect(openclawAccepts?.(running, floor)).toBe(false);
        if (/^\d+\.\d+\.\d+$/.test(running)) expect(openclawAccepts?.(running, floor)).toBe(!older);
      }),
    );
  });
});
