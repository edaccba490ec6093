import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  gstackLayout,
  NEWEST_TESTED_OPENCLAW,
  OLDEST_TESTED_OPENCLAW,
  TESTED_OPENCLAW_TEXT,
} from "@gstack/contracts";
import {
  makeOpenClawHome,
  type OpenClawHome,
  openclawBin,
  openclawEnv,
  openclawVersion,
  relabelledOpenClaw,
} from "@gstack/openclaw-testbed";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { formatDoctor } from "./doctor-check";
import type { DoctorContext } from "./doctor-context";
import { checkOpenClaw } from "./openclaw-checks";

let folder: string;
let openclaw: OpenClawHome;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), "gstack-doctor-openclaw-"));
  openclaw = await makeOpenClawHome();
});

afterAll(async () => {
  await openclaw?.remove();
  await rm(folder, { recursive: true, force: true });
});

/** A doctor context whose PATH has only an `openclaw` that runs `entry` (none when absent). */
async function contextWith(name: string, entry?: string): Promise<DoctorContext> {
  const bin = join(folder, name, "bin");
  await mkdir(bin, { recursive: true });
  if (entry) {
    await writeFile(
      join(bin, "openclaw"),
      `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(entry)} "$@"\n`,
    );
    await chmod(join(bin, "openclaw"), 0o755);
  }
  return {
    layout: gstackLayout(join(folder, name, "gstack")),
    env: openclawEnv(openclaw.home, { PATH: bin }),
    home: openclaw.home,
    platform: "linux",
  };
}

const supported = `the gstack plugin supports OpenClaw ${TESTED_OPENCLAW_TEXT}, the versions it is tested with`;

describe("doctor's OpenClaw version check, with the real openclaw", { timeout: loadBudget(120_000) }, () => {
  it("skips without openclaw on PATH, still naming the supported versions", async () => {
    expect(await checkOpenClaw(await contextWith("none"))).toEqual({
      name: "openclaw",
      status: "skip",
      detail: `openclaw is not on PATH; ${supported}`,
    });
  });

  it("is ok with the pinned OpenClaw the tests run, one of the tested versions", async () => {
    const context = await contextWith("pinned", openclawBin());
    expect(await checkOpenClaw(context)).toEqual({
      name: "openclaw",
      status: "ok",
      detail: `OpenClaw ${openclawVersion} (${join(folder, "pinned", "bin", "openclaw")}); ${supported}`,
    });
  });

  it("warns with the fix when the OpenClaw on PATH is a newer, untested one", async () => {
    const entry = await relabelledOpenClaw("2026.10.1", join(folder, "newer-openclaw"));
    const check = await checkOpenClaw(await contextWith("newer", entry));
    expect(check).toMatchObject({ name: "openclaw", status: "warn" });
    expect(check.detail).toMatch(
      new RegExp(
        `^OpenClaw 2026\\.10\\.1 \\(.*\\) is outside the versions the gstack plugin is tested with \\(${TESTED_OPENCLAW_TEXT.replaceAll(".", "\\.")}\\)`,
      ),
    );
    expect(check.fix).toBe(
      `npm install -g openclaw@${NEWEST_TESTED_OPENCLAW}, then restart the gateway (or, once there is one, install a gstack plugin tested with 2026.10.1)`,
    );
    const report = formatDoctor([check]);
    expect(report.split("\n").filter((line) => line.startsWith("warn  openclaw:"))).toHaveLength(1);
    expect(report).toContain(`      fix: npm install -g openclaw@${NEWEST_TESTED_OPENCLAW}`);
  });

  it("fails when the OpenClaw on PATH is older than the oldest tested, which does not load the plugin", async () => {
    const [year, month] = OLDEST_TESTED_OPENCLAW.split(".");
    const older = `${year}.${Number(month) - 1}.1`;
    const entry = await relabelledOpenClaw(older, join(folder, "older-openclaw"));
    expect(await checkOpenClaw(await contextWith("older", entry))).toMatchObject({
      name: "openclaw",
      status: "fail",
      detail: expect.stringContaining(
        `OpenClaw ${older} (${join(folder, "older", "bin", "openclaw")}) is older than ${OLDEST_TESTED_OPENCLAW}`,
      ),
      fix: `npm install -g openclaw@${NEWEST_TESTED_OPENCLAW}, then restart the gateway`,
    });
  });

  it("warns when openclaw is on PATH but cannot say its version", async () => {
    const check = await checkOpenClaw(await contextWith("broken", join(folder, "removed", "openclaw.mjs")));
    expect(check).toMatchObject({
      name: "openclaw",
      status: "warn",
      fix: `reinstall OpenClaw: npm install -g openclaw@${NEWEST_TESTED_OPENCLAW}, then restart the gateway`,
    });
    expect(check.detail).toContain("--version` failed");
    expect(check.detail).toContain(supported);
  });
});
