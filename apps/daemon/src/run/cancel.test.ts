import { mkdir, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DaemonContext } from "../daemon-context";
import type { CancelOutcome, LiveSession } from "../dispatch/session-runner";
import { auditOf, dispatchFor, makeWorld, roomContext, type TestWorld } from "../test-support";
import { type CancelParts, onControlFile, requestCancel, scanControl } from "./cancel";

let world: TestWorld;
let context: DaemonContext;
let live: Map<string, LiveSession>;
let asked: Array<[string, string]>;
let remembered: Array<[string, string]>;
let waiting: Set<string>;
let parts: CancelParts;

beforeEach(async () => {
  world = await makeWorld();
  context = await roomContext(world);
  live = new Map();
  asked = [];
  remembered = [];
  waiting = new Set();
  parts = {
    context,
    sessions: {
      get: (id) => live.get(id),
      cancel: async (session, reason): Promise<CancelOutcome> => {
        asked.push([session.state.id, reason]);
        return { outcome: "cancelling" };
      },
    },
    intake: {
      idle: async () => {},
      isWaiting: async (id) => waiting.has(id),
      rememberCancel: (id, reason) => {
        remembered.push([id, reason]);
      },
    },
  };
});

afterEach(async () => {
  await context.delivery.stop(0);
  await world.cleanup();
});

/** Puts a running `dispatch-live` in the runner's hands. */
function holdLiveSession(): void {
  live.set("dispatch-live", {
    state: { id: "dispatch-live" },
    dispatch: dispatchFor(world, "x", "y"),
  } as LiveSession);
}

describe("requestCancel", () => {
  it("leaves a live session's cancel to the runner", async () => {
    live.set("dispatch-live", { state: { id: "dispatch-live" }, dispatch: {} } as LiveSession);
    expect(await requestCancel(parts, "dispatch-live", "stop")).toEqual({ outcome: "cancelling" });
    expect(asked).toEqual([["dispatch-live", "stop"]]);
  });

  it("answers finished with the terminal status for a dispatch that ended, and changes nothing", async () => {
    const path = context.layout.dispatch.completedJson("dispatch-ended");
    await writeFile(path, JSON.stringify({ dispatch_id: "dispatch-ended", status: "timeout", duration: 3 }));
    expect(await requestCancel(parts, "dispatch-ended", "late")).toEqual({
      outcome: "finished",
      status: "timeout",
    });
    expect(await auditOf(world.layout)).toEqual([]);
    expect(asked).toEqual([]);
  });

  it("remembers a cancel for a dispatch still on its way in", async () => {
    waiting.add("dispatch-coming");
    expect(await requestCancel(parts, "dispatch-coming", "early")).toEqual({ outcome: "pending" });
    expect(remembered).toEqual([["dispatch-coming", "cancel requested before the dispatch was taken"]]);
  });

  it("does not remember one while the daemon stops, and audits an id nobody knows", async () => {
    context.stopping = true;
    waiting.add("dispatch-coming");
    expect(await requestCancel(parts, "dispatch-coming", "early")).toEqual({ outcome: "unknown" });
    expect(remembered).toEqual([]);
    expect(await auditOf(world.layout)).toEqual([
      expect.objectContaining({
        event: "rejected",
        dispatch_id: "dispatch-coming",
        reason: "cancel: no queued or running dispatch dispatch-coming",
      }),
    ]);
  });

  it("takes a cancel from a control file, which is removed, and ignores other names", async () => {
    const control = context.layout.dispatch.control;
    holdLiveSession();
    await writeFile(join(control, "dispatch-live.cancel"), "{}");
    await writeFile(join(control, "notes.txt"), "hello");
    await onControlFile(parts, join(control, "dispatch-live.cancel"), "dispatch-live.cancel");
    await onControlFile(parts, join(control, "notes.txt"), "notes.txt");
    expect(asked).toEqual([["dispatch-live", "cancel requested"]]);
    expect(await readdir(control)).toEqual([]);
  });

  it("acts once on a control file reported several times, at once or after it is gone", async () => {
    const control = context.layout.dispatch.control;
    holdLiveSession();
    const path = join(control, "dispatch-live.cancel");
    await writeFile(path, "{}");
    await Promise.all([1, 2, 3].map(() => onControlFile(parts, path, "dispatch-live.cancel")));
    await scanControl(parts);
    await onControlFile(parts, path, "dispatch-live.cancel");
    expect(asked).toEqual([["dispatch-live", "cancel requested"]]);
  });

  it("rescans control/ past a name it cannot remove, leaving writers' hidden files alone", async () => {
    const control = context.layout.dispatch.control;
    holdLiveSession();
    await mkdir(join(control, "a-folder.cancel"));
    await writeFile(join(control, ".dispatch-live.cancel.tmp"), "{}");
    await writeFile(join(control, "dispatch-live.cancel"), "{}");
    await scanControl(parts);
    expect(asked).toEqual([["dispatch-live", "cancel requested"]]);
    expect((await readdir(control)).sort()).toEqual([".dispatch-live.cancel.tmp", "a-folder.cancel"]);
  });
});
