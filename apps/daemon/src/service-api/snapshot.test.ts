import { execFileSync } from "node:child_process";
import type { SessionState } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { makeWorld, type TestWorld } from "../test-support";
import { dispatchSnapshot } from "./snapshot";

let world: TestWorld;
beforeEach(async () => {
  world = await makeWorld();
});
afterEach(async () => {
  await world.cleanup();
});

describe("dispatchSnapshot of a live session", () => {
  it("answers from the state as it was when asked, though the run ends while commits are counted", async () => {
    const head = execFileSync("git", ["-C", world.repo, "rev-parse", "HEAD"], { encoding: "utf8" }).trim();
    const state: SessionState = {
      id: "dispatch-live",
      project: "acme",
      project_dir: world.repo,
      agent: "claude",
      status: "running",
      claimed_file: "claimed/dispatch-live.json",
      first_seen: "2026-11-25T10:00:00.000Z",
      queued_at: "2026-11-25T10:00:00.000Z",
      started_at: "2026-11-25T10:00:01.000Z",
      attempt: 1,
      retries: 0,
      include_learnings: false,
      base_sha: head,
      progress: { turns: 3, toolUses: 2, lastAction: "Bash: git commit" } as SessionState["progress"],
      updated_at: "2026-11-25T10:00:01.000Z",
    };
    const asked = dispatchSnapshot(
      {
        layout: world.layout,
        now: () => new Date("2026-11-25T10:00:11.000Z"),
        live: (id) => {
          // The runner moves on while the answer is being built (commits are read from .git).
          setImmediate(() => {
            state.status = "finished";
            state.progress = { ...state.progress!, turns: 4 };
          });
          return id === state.id ? state : undefined;
        },
        position: () => undefined,
        isWaiting: async () => false,
      },
      state.id,
      { report: false },
    );
    const snapshot = await asked;
    expect(state.status).toBe("finished");
    expect(snapshot).toMatchObject({
      dispatch_id: "dispatch-live",
      status: "running",
      terminal: false,
      elapsed: 10,
      progress: { turns: 3, tool_uses: 2 },
      run: { attempt: 1, commit_shas: [] },
    });
  });
});
