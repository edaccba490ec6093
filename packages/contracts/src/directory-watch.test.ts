import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { DirectoryWatch } from "./directory-watch";

/** How long an event may take to arrive. */
const WAIT = { timeout: loadBudget(10_000), interval: 10 };

let base: string;
let watches: DirectoryWatch[];
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), "directory-watch-"));
  watches = [];
});
afterEach(() => {
  for (const watch of watches) watch.close();
  rmSync(base, { recursive: true, force: true });
});

function follow(folder: string) {
  const names: string[] = [];
  const errors: Error[] = [];
  const watch = new DirectoryWatch(folder, {
    onName: (name) => names.push(name),
    onUnknown: () => names.push("<unknown>"),
    onError: (error) => errors.push(error),
  });
  watches.push(watch);
  return { watch, names, errors };
}

describe("DirectoryWatch", () => {
  it("names what is created, renamed in and written in the folder, and nothing of its subfolders", async () => {
    const folder = join(base, "dispatch");
    mkdirSync(join(folder, "sub"), { recursive: true });
    const { watch, names } = follow(folder);
    watch.ensure();
    expect(watch.watching).toBe(true);
    writeFileSync(join(folder, "sub", "deep.json"), "{}");
    writeFileSync(join(base, "outside.json"), "{}");
    renameSync(join(base, "outside.json"), join(folder, "moved-in.json"));
    writeFileSync(join(folder, "written.json"), "{}");
    await vi.waitUntil(() => names.includes("moved-in.json") && names.includes("written.json"), WAIT);
    expect(names).not.toContain("deep.json");
    expect(names).not.toContain("<unknown>");
  });

  it("keeps following a folder removed and made again once renewed, and not before", async () => {
    const folder = join(base, "dispatch");
    mkdirSync(folder);
    const { watch, names } = follow(folder);
    watch.ensure();
    expect(await watch.renew()).toBe(false);
    rmSync(folder, { recursive: true });
    mkdirSync(folder);
    expect(await watch.renew()).toBe(true);
    expect(await watch.renew()).toBe(false);
    writeFileSync(join(folder, "after.json"), "{}");
    await vi.waitUntil(() => names.includes("after.json"), WAIT);
  });

  it("throws when the folder cannot be watched, and renews once it exists", async () => {
    const folder = join(base, "missing");
    const { watch, names } = follow(folder);
    expect(() => watch.ensure()).toThrow(/ENOENT/);
    expect(watch.watching).toBe(false);
    mkdirSync(folder);
    expect(await watch.renew()).toBe(true);
    writeFileSync(join(folder, "late.json"), "{}");
    await vi.waitUntil(() => names.includes("late.json"), WAIT);
  });

  it("stops for good when closed", async () => {
    const folder = join(base, "dispatch");
    mkdirSync(folder);
    const { watch, names } = follow(folder);
    // A second watch of the folder, left open: once it has the name, the closed one would have too.
    const witness = follow(folder);
    witness.watch.ensure();
    watch.ensure();
    watch.close();
    expect(await watch.renew()).toBe(false);
    writeFileSync(join(folder, "ignored.json"), "{}");
    await vi.waitUntil(() => witness.names.includes("ignored.json"), WAIT);
    expect(names).toEqual([]);
  });
});
