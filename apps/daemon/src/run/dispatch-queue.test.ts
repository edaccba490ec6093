import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout } from "@gstack/contracts";
import { readQueueFile, writeQueueFile } from "@gstack/daemon-client";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { DispatchQueue } from "./dispatch-queue";

const seed = Number(process.env.FC_SEED ?? Date.now() % 1_000_000);
console.log(`dispatch-queue properties: fast-check seed ${seed}`);

function memoryQueue(maxConcurrent = 2) {
  const saves: string[][] = [];
  const queue = new DispatchQueue({
    maxConcurrent: () => maxConcurrent,
    save: async (ids) => {
      saves.push([...ids]);
    },
  });
  return { queue, saves };
}

describe("DispatchQueue order and slots", () => {
  it("starts dispatches first in, first out, no more at once than the slots allow", () => {
    const { queue } = memoryQueue(2);
    expect(queue.push("a")).toBe(1);
    expect(queue.push("b")).toBe(2);
    expect(queue.push("c")).toBe(3);
    expect(queue.next()).toBe("a");
    expect(queue.next()).toBe("b");
    expect(queue.next()).toBeUndefined();
    expect(queue.active).toBe(2);
    expect(queue.ids).toEqual(["c"]);
    expect(queue.holdsSlot("a")).toBe(true);
    queue.releaseSlot("a");
    expect(queue.holdsSlot("a")).toBe(false);
    expect(queue.next()).toBe("c");
    expect(queue.next()).toBeUndefined();
  });

  it("puts an interrupted dispatch before the others and takes out a cancelled one", () => {
    const { queue } = memoryQueue(1);
    queue.push("a");
    queue.push("b");
    queue.putFirst("interrupted");
    expect(queue.remove("a")).toBe(true);
    expect(queue.remove("a")).toBe(false);
    expect(queue.ids).toEqual(["interrupted", "b"]);
    expect(queue.next()).toBe("interrupted");
  });

  it("asks for the slot count each time, so a smaller limit holds back new starts", () => {
    let limit = 3;
    const queue = new DispatchQueue({ maxConcurrent: () => limit, save: async () => {} });
    for (const id of ["a", "b", "c", "d"]) queue.push(id);
    expect(queue.next()).toBe("a");
    limit = 1;
    expect(queue.hasFreeSlot()).toBe(false);
    expect(queue.next()).toBeUndefined();
    queue.releaseSlot("a");
    expect(queue.next()).toBe("b");
  });

  it("behaves like a plain list and a set of slot holders under any sequence of operations", () => {
    const operation = fc.oneof(
      fc.record({ kind: fc.constant("push" as const), id: fc.integer({ min: 0, max: 9 }) }),
      fc.record({ kind: fc.constant("putFirst" as const), id: fc.integer({ min: 0, max: 9 }) }),
      fc.record({ kind: fc.constant("remove" as const), id: fc.integer({ min: 0, max: 9 }) }),
      fc.record({ kind: fc.constant("next" as const) }),
      fc.record({ kind: fc.constant("release" as const), id: fc.integer({ min: 0, max: 9 }) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(operation, { maxLength: 60 }),
        (limit, operations) => {
          const { queue } = memoryQueue(limit);
          let waiting: string[] = [];
          const slots = new Set<string>();
          for (const step of operations) {
            if (step.kind === "push") {
              waiting.push(String(step.id));
              expect(queue.push(String(step.id))).toBe(waiting.length);
            } else if (step.kind === "putFirst") {
              waiting.unshift(String(step.id));
              queue.putFirst(String(step.id));
            } else if (step.kind === "remove") {
              const had = waiting.includes(String(step.id));
              waiting = waiting.filter((id) => id !== String(step.id));
              expect(queue.remove(String(step.id))).toBe(had);
            } else if (step.kind === "release") {
              slots.delete(String(step.id));
              queue.releaseSlot(String(step.id));
            } else {
              const expected = waiting.length > 0 && slots.size < limit ? waiting.shift() : undefined;
              if (expected !== undefined) slots.add(expected);
              expect(queue.next()).toBe(expected);
            }
            expect(queue.ids).toEqual(waiting);
            expect(queue.active).toBe(slots.size);
            expect(queue.active).toBeLessThanOrEqual(limit);
          }
        },
      ),
      { seed },
    );
  });
});

describe("DispatchQueue saving", () => {
  it("saves the order as it is when the save runs, and skips saves that change nothing", async () => {
    const { queue, saves } = memoryQueue(1);
    queue.push("a");
    queue.push("b");
    const first = queue.save();
    queue.push("c");
    await first;
    expect(saves).toEqual([["a", "b", "c"]]);
    await queue.save();
    expect(saves).toHaveLength(1);
    queue.next();
    await queue.save();
    expect(saves).toEqual([
      ["a", "b", "c"],
      ["b", "c"],
    ]);
  });

  it("runs saves one after another and reports a failed save without rejecting", async () => {
    const errors: string[] = [];
    let running = 0;
    let overlapped = false;
    let fail = true;
    const queue = new DispatchQueue({
      maxConcurrent: () => 1,
      save: async () => {
        running += 1;
        if (running > 1) overlapped = true;
        await new Promise((resolve) => setTimeout(resolve, 5));
        running -= 1;
        if (fail) {
          fail = false;
          throw new Error("disk full");
        }
      },
      onSaveError: (error) => errors.push(error.message),
    });
    queue.push("a");
    const saves = [queue.save(), queue.save()];
    queue.push("b");
    saves.push(queue.save());
    await Promise.all(saves);
    await queue.settled();
    expect(overlapped).toBe(false);
    expect(errors).toEqual(["disk full"]);
  });

  const folders: string[] = [];
  afterEach(async () => {
    for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true });
  });

  it("keeps its order in the queue file the daemon reads back at start", async () => {
    const folder = await mkdtemp(join(tmpdir(), "gstack-dispatch-queue-"));
    folders.push(folder);
    const layout = gstackLayout(folder);
    const queue = new DispatchQueue({ maxConcurrent: () => 1, save: (ids) => writeQueueFile(layout, ids) });
    for (const id of ["dispatch-1", "dispatch-2", "dispatch-3"]) queue.push(id);
    queue.next();
    queue.putFirst("dispatch-0");
    await queue.save();
    expect(await readQueueFile(layout)).toEqual(["dispatch-0", "dispatch-2", "dispatch-3"]);
  });
});
