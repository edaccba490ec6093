import { execFile } from "node:child_process";
import { chmod, mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { gstackLayout } from "@gstack/contracts";
import {
  makeOpenClawHome,
  type OpenClawHome,
  openclawBin,
  openclawEnv,
  runOpenClaw,
} from "@gstack/openclaw-testbed";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { dispatchCommand } from "../test-support";
import type { DoctorContext } from "./doctor-context";
import { checkPlugin } from "./openclaw-checks";

const run = promisify(execFile);
const pluginPackageDir = join(import.meta.dirname, "..", "..", "..", "..", "packages", "openclaw-plugin");
let folder: string;
let tarball: string;
let openclaw: OpenClawHome;
let context: DoctorContext;

// The real `openclaw` on PATH, with a throw-away home, and the plugin packed as it is published.
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), "gstack-doctor-plugin-"));
  const pack = join(folder, "pack");
  await mkdir(pack);
  await run("pnpm", ["pack", "--pack-destination", pack], { cwd: pluginPackageDir });
  const packed = (await readdir(pack)).find((name) => name.endsWith(".tgz"));
  if (!packed) throw new Error(`pnpm pack left no tarball in ${pack}`);
  tarball = join(pack, packed);
  const bin = join(folder, "bin");
  await mkdir(bin);
  await writeFile(
    join(bin, "openclaw"),
    `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(openclawBin())} "$@"\n`,
  );
  await chmod(join(bin, "openclaw"), 0o755);
  openclaw = await makeOpenClawHome();
  const env = openclawEnv(openclaw.home, { PATH: `${bin}${delimiter}${process.env.PATH ?? ""}` });
  context = { layout: gstackLayout(join(folder, "gstack")), env, home: openclaw.home, platform: "linux" };
}, 300_000);

afterAll(async () => {
  await openclaw?.remove();
  await rm(folder, { recursive: true, force: true });
});

describe("the OpenClaw plugin in doctor and uninstall, with the real openclaw", {
  timeout: loadBudget(300_000),
}, () => {
  it("fails with the one-line fix while the plugin is not installed", async () => {
    const check = await checkPlugin(context);
    expect(check).toMatchObject({ name: "openclaw-plugin", status: "fail" });
    expect(check.fix).toMatch(
      /^openclaw plugins install \S+\.tgz --accept-capabilities && openclaw plugins enable gstack$/,
    );
  });

  it("says ok once the plugin is installed and enabled, and fails again when disabled", async () => {
    const install = await runOpenClaw(["plugins", "install", tarball, "--force", "--accept-capabilities"], {
      home: openclaw.home,
    });
    expect(install.code, install.stdout + install.stderr).toBe(0);
    const enable = await runOpenClaw(["plugins", "enable", "gstack"], { home: openclaw.home });
    expect(enable.code, enable.stdout + enable.stderr).toBe(0);
    expect(await checkPlugin(context)).toEqual({
      name: "openclaw-plugin",
      status: "ok",
      detail: "installed and enabled in OpenClaw",
    });

    const disable = await runOpenClaw(["plugins", "disable", "gstack"], { home: openclaw.home });
    expect(disable.code, disable.stdout + disable.stderr).toBe(0);
    expect(await checkPlugin(context)).toMatchObject({
      status: "fail",
      detail: "installed but disabled",
      fix: "openclaw plugins enable gstack, then restart the gateway",
    });
  });

  it("is gone after gstack-dispatch uninstall, which says so", async () => {
    const uninstall = await run(
      process.execPath,
      [
        ...dispatchCommand(),
        "uninstall",
        "--platform",
        "linux",
        "--keep-commands",
        "--root",
        context.layout.root,
      ],
      { env: { ...context.env, NO_COLOR: "1" } },
    );
    expect(uninstall.stdout).toContain(
      "removed the gstack plugin from OpenClaw (restart the gateway to unload it)",
    );
    expect(await checkPlugin(context)).toMatchObject({
      status: "fail",
      detail: "OpenClaw has no gstack plugin",
    });
  });
});
