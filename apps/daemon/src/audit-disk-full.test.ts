import { execFileSync } from "node:child_process";
import { mkdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { auditLog } from "./daemon-context";
import { canMountTmpfs, fill } from "./run/tmpfs-test-support";
import { makeWorld, type TestWorld, waitFor } from "./test-support";

const mountable = canMountTmpfs();
if (!mountable) {
  console.log("audit disk-full test skipped: a tmpfs cannot be mounted here (it needs root on Linux)");
}

let world: TestWorld;
let mounted = false;

beforeEach(async () => {
  world = await makeWorld();
});

afterEach(async () => {
  if (mounted) execFileSync("umount", [world.root]);
  mounted = false;
  await world.cleanup();
});

async function auditLines(path: string): Promise<string[]> {
  return (await readFile(path, "utf8").catch(() => "")).split("\n").filter(Boolean);
}

describe.skipIf(!mountable)("the audit log on a disk that fills up", () => {
  it("holds the events the disk has no room for, never tears a line, and writes each once in order when room returns", async () => {
    await mkdir(world.root, { recursive: true });
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", world.root]);
    mounted = true;
    const logged: string[] = [];
    const audit = auditLog(
      world.layout,
      () => new Date(),
      (line) => logged.push(line),
      20,
    );
    await audit("spawned", { dispatch_id: "dispatch-first" });
    const filler = join(world.root, "filler");
    await fill(filler);
    // Lines of about 1 KiB: the room left in the log's last page takes a few whole ones and
    // part of the next, which the file system accepts before it refuses the rest.
    const ids = Array.from({ length: 12 }, (_, index) => `dispatch-${index}`);
    for (const id of ids) {
      await audit("spawned", { dispatch_id: id, detail: { pad: "x".repeat(1000) } });
    }
    const path = world.layout.dispatch.audit;
    const whileFull = await auditLines(path);
    expect(whileFull.length).toBeLessThan(ids.length + 1);
    // Every line there is whole: nothing of a refused event was left to spoil the next.
    for (const line of whileFull) expect(() => JSON.parse(line)).not.toThrow();
    expect(logged.some((line) => line.startsWith("the audit log is waiting for disk space"))).toBe(true);
    await rm(filler);
    const written = await waitFor(async () => {
      const lines = await auditLines(path);
      return lines.length >= ids.length + 1 ? lines : undefined;
    });
    const events = written.map((line) => JSON.parse(line) as { dispatch_id: string });
    expect(events.map((event) => event.dispatch_id)).toEqual(["dispatch-first", ...ids]);
    expect(logged.filter((line) => line.startsWith("could not write"))).toEqual([]);
  });
});
