import { execFile } from "node:child_process";
import { mkdir, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sampleCompletion } from "../deliver/delivery-test-support";
import { dispatchCommand, makeWorld, type TestWorld } from "../test-support";
import { formatEndings, recentEndings } from "./recent-endings";

let world: TestWorld;
beforeEach(async () => {
  world = await makeWorld();
});
afterEach(async () => {
  await world.cleanup();
});

async function writeCompletion(id: string, extra: Record<string, unknown>, minutesAgo: number) {
  const folder = world.layout.dispatch.completed;
  await mkdir(folder, { recursive: true });
  const path = join(folder, `${id}.json`);
  const finished = new Date(Date.now() - minutesAgo * 60_000);
  await writeFile(
    path,
    JSON.stringify(sampleCompletion(id, { finished_at: finished.toISOString(), ...extra })),
  );
  await utimes(path, finished, finished);
}

describe("recent endings", () => {
  it("lists the newest first with their outcome, a failure with its kind and first line", async () => {
    await writeCompletion("dispatch-old", {}, 300);
    await writeCompletion(
      "dispatch-crashed",
      {
        status: "failed",
        error_kind: "agent_crashed",
        error: "The agent CLI crashed (it was killed by SIGSEGV).\nmore",
        commits: 0,
      },
      1,
    );
    await writeCompletion("dispatch-done", {}, 20);
    await mkdir(world.layout.dispatch.completed, { recursive: true });
    await writeFile(join(world.layout.dispatch.completed, "dispatch-broken.json"), "{not json");
    const endings = await recentEndings(world.layout, 2);
    expect(endings.map((ending) => ending.completion.dispatch_id)).toEqual([
      "dispatch-crashed",
      "dispatch-done",
    ]);
    const lines = formatEndings(endings);
    expect(lines[0]).toBe("recent endings:");
    expect(lines[1]).toMatch(
      /^ {2}✗ dispatch-crashed {2}acme-widget {2}failed {2}60s ago {2}agent_crashed: The agent CLI crashed \(it was killed by SIGSEGV\)\.$/,
    );
    expect(lines[2]).toMatch(
      /^ {2}✓ dispatch-done {2}acme-widget {2}completed {2}20m ago {2}3 commit\(s\), acme\/widget#47$/,
    );
  });

  it("appear in gstack-dispatch status when no daemon runs", async () => {
    await writeCompletion(
      "dispatch-failed-a-minute-ago",
      { status: "failed", error_kind: "auth", error: "Not signed in" },
      1,
    );
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(
        process.execPath,
        [...dispatchCommand(), "status", "--root", world.root],
        { cwd: join(import.meta.dirname, "..", ".."), env: { ...process.env, NO_COLOR: "1" } },
        (error, out) => (error ? reject(error) : resolve(out)),
      ),
    );
    expect(stdout).toContain("daemon not running");
    expect(stdout).toMatch(/✗ dispatch-failed-a-minute-ago .* failed .* auth: Not signed in/);
  });
});
