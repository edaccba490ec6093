import { execFileSync } from "node:child_process";
import {
  chmod,
  chown,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  stat,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isSupportedNode, MINIMUM_NODE, SUPPORTED_NODE_RANGE, unsupportedNodeLine } from "./node-support";

const repository = join(import.meta.dirname, "..", "..", "..");

async function packageManifests(): Promise<string[]> {
  const manifests = [join(repository, "package.json")];
  for (const group of ["packages", "apps"]) {
    for (const name of await readdir(join(repository, group))) {
      manifests.push(join(repository, group, name, "package.json"));
    }
  }
  return manifests;
}

describe("one supported Node.js range", () => {
  it("is the engines range of every package, the root included", async () => {
    for (const manifest of await packageManifests()) {
      const engines = JSON.parse(await readFile(manifest, "utf8")).engines;
      expect({ manifest, node: engines?.node }).toEqual({ manifest, node: SUPPORTED_NODE_RANGE });
    }
  });

  it("is the range ./dev requires before it fetches its own Node", async () => {
    const dev = await readFile(join(repository, "dev"), "utf8");
    expect(dev).toContain(`node_major=${MINIMUM_NODE.major}\n`);
    expect(dev).toContain(`node_minor=${MINIMUM_NODE.minor}\n`);
  });

  it("accepts the minimum and everything after it, refuses everything before", () => {
    fc.assert(
      fc.property(fc.nat(40), fc.nat(40), fc.nat(40), (major, minor, patch) => {
        const expected =
          major > MINIMUM_NODE.major || (major === MINIMUM_NODE.major && minor >= MINIMUM_NODE.minor);
        expect(isSupportedNode(`${major}.${minor}.${patch}`)).toBe(expected);
        expect(isSupportedNode(`v${major}.${minor}.${patch}`)).toBe(expected);
      }),
    );
    expect(isSupportedNode("24.16.0")).toBe(true);
    expect(isSupportedNode("24.15.9")).toBe(false);
    expect(isSupportedNode("20.20.2")).toBe(false);
  });

  it("names the range, the running version and where to get Node in one line", () => {
    const line = unsupportedNodeLine("gstack-dispatch", "20.20.2", "/usr/bin/node");
    expect(line).not.toContain("\n");
    expect(line).toContain(">=24.16");
    expect(line).toContain("20.20.2 (/usr/bin/node)");
    expect(line).toContain("https://nodejs.org");
  });
});

describe("the compile cache of the commands", () => {
  const run = async (env: NodeJS.ProcessEnv, home: string) => {
    const module = join(home, "some-module.mjs");
    await writeFile(module, "export const value = 1;\n");
    const script = `import { startCommand } from ${JSON.stringify(join(import.meta.dirname, "node-support.ts"))};
startCommand("gstack-test"); await import(${JSON.stringify(module)});`;
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) => !/^(NODE_COMPILE_CACHE|NODE_DISABLE_COMPILE_CACHE|XDG_CACHE_HOME|HOME)$/.test(name),
      ),
    );
    execFileSync(process.execPath, ["--input-type=module", "-e", script], {
      env: { ...clean, HOME: home, ...env },
    });
  };
  const withHome = async (body: (home: string) => Promise<void>) => {
    const home = await mkdtemp(join(tmpdir(), "gstack-compile-cache-"));
    try {
      await body(home);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  };
  const entries = async (folder: string) => (await readdir(folder, { recursive: true })).length;

  it("is kept in the user's own folder, made 0700, not in the shared temporary folder", async () => {
    await withHome(async (home) => {
      await run({}, home);
      const folder = join(home, ".cache", "gstack", "node-compile-cache");
      expect((await stat(folder)).mode & 0o777).toBe(0o700);
      expect(await entries(folder)).toBeGreaterThan(0);
      await run({ XDG_CACHE_HOME: join(home, "xdg") }, home);
      expect(await entries(join(home, "xdg", "gstack", "node-compile-cache"))).toBeGreaterThan(0);
    });
  });

  it("closes a folder of the user's that others could read, and uses no folder that is not the user's", async () => {
    await withHome(async (home) => {
      const folder = join(home, ".cache", "gstack", "node-compile-cache");
      await mkdir(folder, { recursive: true, mode: 0o755 });
      await chmod(folder, 0o755);
      await run({}, home);
      expect((await stat(folder)).mode & 0o777).toBe(0o700);
      expect(await entries(folder)).toBeGreaterThan(0);
      // A link to somewhere else is not the folder.
      const elsewhere = join(home, "elsewhere");
      await mkdir(elsewhere);
      await run({ XDG_CACHE_HOME: join(home, "linked") }, home);
      const linked = join(home, "linked", "gstack", "node-compile-cache");
      await rm(linked, { recursive: true });
      await symlink(elsewhere, linked);
      await run({ XDG_CACHE_HOME: join(home, "linked") }, home);
      expect(await entries(elsewhere)).toBe(0);
      // Another user's folder (only root can make one here to try).
      if (process.getuid?.() === 0) {
        const theirs = join(home, "theirs", "gstack", "node-compile-cache");
        await mkdir(theirs, { recursive: true, mode: 0o700 });
        await chown(theirs, 4321, 4321);
        await run({ XDG_CACHE_HOME: join(home, "theirs") }, home);
        expect(await entries(theirs)).toBe(0);
      }
    });
  });
});
