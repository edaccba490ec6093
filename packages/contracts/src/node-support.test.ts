import { readdir, readFile } from "node:fs/promises";
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
