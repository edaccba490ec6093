import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { dispatchCommand } from "../test-support";

let base: string;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-install-refusal-"));
  await mkdir(join(base, "home"));
  await mkdir(join(base, "runtime"));
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

/**
 * `gstack-dispatch install` for Linux in a fresh HOME, with the real systemctl and no user bus
 * it could reach (an empty XDG_RUNTIME_DIR, a bus address that does not exist): systemd refuses
 * on every machine, as it does on a server where the user has no session.
 */
function installWithoutBus(): Promise<{ code: number; stdout: string; stderr: string }> {
  const home = join(base, "home");
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [...dispatchCommand(), "install", "--platform", "linux", "--root", join(base, "gstack")],
      {
        cwd: join(import.meta.dirname, "..", ".."),
        env: {
          ...process.env,
          PATH: "/usr/bin:/bin",
          HOME: home,
          XDG_CONFIG_HOME: join(home, ".config"),
          XDG_RUNTIME_DIR: join(base, "runtime"),
          DBUS_SESSION_BUS_ADDRESS: `unix:path=${join(base, "runtime", "no-bus")}`,
          NO_COLOR: "1",
        },
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/** What is under `folder`, but Node's compile cache, which every gstack command keeps in ~/.cache. */
async function filesUnder(folder: string): Promise<string[]> {
  return (await readdir(folder, { recursive: true }))
    .map(String)
    .filter((path) => path !== ".cache" && !/^\.cache\/gstack(\/|$)/.test(path))
    .sort();
}

const hasSystemctl = await new Promise<boolean>((resolve) =>
  execFile("systemctl", ["--version"], (error) => resolve(!error)),
);

describe.skipIf(!hasSystemctl)(
  "gstack-dispatch install when systemd refuses",
  { timeout: loadBudget(60_000) },
  () => {
    it("exits non-zero with systemd's own words and leaves nothing behind", async () => {
      const result = await installWithoutBus();
      expect(result.code).toBe(1);
      const lines = result.stderr.split("\n").filter((line) => line.startsWith("gstack-dispatch:"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain("systemd refused: `systemctl --user daemon-reload` said: ");
      expect(lines[0]).toMatch(/Failed to connect to (the )?bus/i);
      expect(lines[0]).toContain("nothing was installed");
      expect(lines[0]).toContain("loginctl enable-linger");
      expect(result.stdout).toBe("");
      // No unit, no default.target.wants link, not even the folders made for them.
      expect(await filesUnder(join(base, "home"))).toEqual([]);
    });

    it("puts back the unit an earlier install wrote", async () => {
      const folder = join(base, "home", ".config", "systemd", "user");
      await mkdir(folder, { recursive: true });
      const earlier = "[Unit]\nDescription=an earlier gstack dispatch unit\n";
      await writeFile(join(folder, "gstack-dispatch.service"), earlier);
      const result = await installWithoutBus();
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("the earlier unit is back in place");
      expect(await readFile(join(folder, "gstack-dispatch.service"), "utf8")).toBe(earlier);
      expect(await filesUnder(join(base, "home"))).toEqual([
        ".config",
        ".config/systemd",
        ".config/systemd/user",
        ".config/systemd/user/gstack-dispatch.service",
      ]);
    });
  },
);
