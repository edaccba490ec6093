import { execFileSync } from "node:child_process";
import { mkdir, readdir, readFile, rename, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { submitDispatch } from "@gstack/daemon-client";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Daemon } from "../daemon";
import { useDaemonWorld } from "../daemon-test-world";
import { auditOf, completionOf, dispatchFor, type TestWorld, testDaemon, waitFor } from "../test-support";
import { decodeUtf8, firstInvalidUtf8Offset, readClaimed, UnreadableDispatchError } from "./intake";

const daemonWorld = useDaemonWorld();
let world: TestWorld;
let daemon: Daemon | undefined;

beforeEach(() => {
  world = daemonWorld.world;
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
});

function newDaemon(): Daemon {
  daemon = testDaemon(world);
  return daemon;
}

async function refusalOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof UnreadableDispatchError) return `${error.rule}: ${error.message}`;
    throw error;
  }
  throw new Error("read succeeded");
}

/** Fails the test instead of hanging when `promise` does not settle in time. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe("reading a claimed file", () => {
  it("refuses a FIFO at once instead of waiting for a writer", async () => {
    const fifo = join(world.base, "fifo.json");
    execFileSync("mkfifo", [fifo]);
    expect(await within(refusalOf(readClaimed(fifo)), 2000, "reading a FIFO")).toBe(
      "file-type: is not a regular file",
    );
  });

  it("refuses a symbolic link to /dev/zero without reading it", async () => {
    const link = join(world.base, "zero.json");
    await symlink("/dev/zero", link);
    expect(await refusalOf(readClaimed(link))).toMatch(/^symlink: /);
  });

  it("refuses a device opened directly", async () => {
    expect(await refusalOf(readClaimed("/dev/zero"))).toBe("file-type: is not a regular file");
  });

  it("names the byte offset of invalid UTF-8", async () => {
    const path = join(world.base, "latin1.json");
    await writeFile(
      path,
      Buffer.concat([Buffer.from('{"task":"caf'), Buffer.from([0xe9]), Buffer.from('"}')]),
    );
    expect(await refusalOf(readClaimed(path))).toBe(
      "encoding: is not valid UTF-8 (first invalid byte at offset 12)",
    );
  });

  it("finds the first invalid UTF-8 byte exactly where a strict decoder stops", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
        const offset = firstInvalidUtf8Offset(bytes);
        const strict = new TextDecoder("utf-8", { fatal: true });
        // Everything before the offset is valid; the offset is the length exactly when all is.
        strict.decode(bytes.subarray(0, offset));
        let valid = true;
        try {
          strict.decode(bytes);
        } catch {
          valid = false;
        }
        expect(offset === bytes.length).toBe(valid);
      }),
      { seed: 1511, numRuns: 2000 },
    );
    fc.assert(
      fc.property(fc.string({ unit: "grapheme" }), (text) => {
        expect(decodeUtf8(Buffer.from(text, "utf8"))).toBe(text);
      }),
      { seed: 1511 },
    );
  });
});

describe("files swapped after they were inspected", () => {
  it("starts and refuses a FIFO left in claimed/ by an earlier swap", async () => {
    await mkdir(world.layout.dispatch.claimed, { recursive: true });
    execFileSync("mkfifo", [join(world.layout.dispatch.claimed, ".claim-1-abcdef")]);
    execFileSync("mkfifo", [world.layout.dispatch.claimedFile("dispatch-fifo")]);
    await within(newDaemon().start(), 10_000, "starting with FIFOs in claimed/");
    expect(await readdir(world.layout.dispatch.claimed)).toEqual([]);
    const rejected = (await auditOf(world.layout)).filter((event) => event.event === "rejected");
    expect(rejected.map((event) => event.reason)).toEqual([
      "file-type: is not a regular file",
      "file-type: is not a regular file",
    ]);
    await within(daemon?.stop(0) ?? Promise.resolve(), 10_000, "stopping");
    daemon = undefined;
  });

  it("never wedges when dispatch files are swapped for FIFOs and device links, over many tries", async () => {
    const tries = 40;
    await newDaemon().start();
    const before = process.memoryUsage().rss;
    const incoming = world.layout.dispatch.incoming;
    for (let index = 0; index < tries; index += 1) {
      const name = `race-${index}.json`;
      const swap = join(world.base, `swap-${index}`);
      if (index % 2 === 0) execFileSync("mkfifo", [swap]);
      else await symlink("/dev/zero", swap);
      await writeFile(
        join(incoming, name),
        JSON.stringify(dispatchFor(world, `dispatch-race-${index}`, "say hello")),
      );
      // Replace the regular file with the FIFO or link, racing the daemon's inspection.
      await rename(swap, join(incoming, name));
    }
    await submitDispatch(world.layout, dispatchFor(world, "dispatch-after", "commit after.txt"));
    expect(await waitFor(() => completionOf(world.layout, "dispatch-after"))).toMatchObject({
      status: "completed",
    });
    await waitFor(async () =>
      (await readdir(incoming)).some((name) => name.startsWith("race-")) ? undefined : true,
    );
    await within(daemon?.idle() ?? Promise.resolve(), 10_000, "intake");
    // Every swapped-in entry was refused with a reason; none is left anywhere to wedge a restart.
    const reasons = await Promise.all(
      (await readdir(world.layout.dispatch.rejected))
        .filter((name) => name.endsWith(".reason.json"))
        .map(async (name) => JSON.parse(await readFile(join(world.layout.dispatch.rejected, name), "utf8"))),
    );
    const swapped = reasons.filter((reason) => String(reason.file).startsWith("race-"));
    expect(swapped).toHaveLength(tries);
    for (const reason of swapped) expect(["file-type", "symlink"]).toContain(reason.rule);
    expect(await readdir(world.layout.dispatch.claimed)).toEqual([]);
    expect(process.memoryUsage().rss - before).toBeLessThan(256 * 1024 * 1024);
    await within(daemon?.stop(0) ?? Promise.resolve(), 10_000, "stopping");
    daemon = undefined;
    await within(newDaemon().start(), 10_000, "restarting");
  });
});
