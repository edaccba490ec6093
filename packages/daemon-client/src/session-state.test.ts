import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type GstackLayout, gstackLayout } from "@gstack/contracts";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readState, type SessionState, writeState } from "./session-state";

let base: string;
let layout: GstackLayout;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-session-state-"));
  layout = gstackLayout(join(base, "gstack"));
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

function stateOf(id: string, step: number, padding: number): SessionState {
  return {
    id,
    project: "acme-widget",
    project_dir: base,
    agent: "gemini",
    status: "running",
    claimed_file: join(base, `${id}.json`),
    first_seen: "2026-11-20T10:00:00.000Z",
    queued_at: "2026-11-20T10:00:00.000Z",
    attempt: 1,
    retries: 0,
    include_learnings: true,
    updated_at: "2026-11-20T10:00:00.000Z",
    // Writes of different sizes take different times, which is what lets atomic writes in
    // flight together rename out of order.
    progress: { lastAction: `step ${step} ${"x".repeat(padding)}` } as SessionState["progress"],
  };
}

describe("writeState", () => {
  it("leaves the last state asked for on disk when writes of one dispatch overlap", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 2, maxLength: 6 }),
        async (paddings) => {
          const id = `dispatch-order-${paddings.join("-")}`;
          // Each write is asked for while the ones before it are still in flight, as the
          // daemon's progress writes and its launch and settle writes can be.
          const writes = paddings.map((padding, step) => writeState(layout, stateOf(id, step, padding)));
          await Promise.all(writes);
          const last = paddings.length - 1;
          expect((await readState(layout, id))?.progress?.lastAction).toBe(
            `step ${last} ${"x".repeat(paddings[last]!)}`,
          );
        },
      ),
      // A big write asked for first and a small one after it: the one that renamed out of order.
      { numRuns: 30, examples: [[[8816, 0]]] },
    );
  });
});
