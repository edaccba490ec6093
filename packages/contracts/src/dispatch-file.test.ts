import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeDispatchFile } from "./dispatch-file";
import { ContractError } from "./errors";
import { gstackLayout } from "./layout";
import { parseJson } from "./parse";
import { verifyDocument } from "./signature";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "contracts-dispatch-file-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const base = {
  id: "dispatch-test-1",
  dispatched_by: "wintermute",
  task: "Fix the refresh token test",
  project: "acme-baku",
  project_dir: "~/git/baku",
};

describe("writeDispatchFile", () => {
  it("writes a valid dispatch into incoming and leaves nothing in tmp", async () => {
    const layout = gstackLayout(root);
    const now = new Date("2026-04-03T14:30:00.000Z");
    const written = await writeDispatchFile(layout, base, { now });
    expect(written.path).toBe(join(layout.dispatch.incoming, "dispatch-test-1.json"));
    const text = await readFile(written.path, "utf8");
    const parsed = parseJson("dispatch", text);
    expect(parsed.created_at).toBe("2026-04-03T14:30:00.000Z");
    expect(parsed.task).toBe(base.task);
    expect(JSON.parse(text)).not.toHaveProperty("target_agent");
    expect(await readdir(layout.dispatch.tmp)).toEqual([]);
  });

  it("keeps a created_at the caller gave", async () => {
    const layout = gstackLayout(root);
    const written = await writeDispatchFile(layout, { ...base, created_at: "2026-01-01T00:00:00Z" });
    expect(written.document.created_at).toBe("2026-01-01T00:00:00Z");
  });

  it("signs with a secret so that the daemon's verification passes", async () => {
    const layout = gstackLayout(root);
    const secret = "a-long-enough-secret-value";
    const written = await writeDispatchFile(layout, base, { secret });
    const onDisk = JSON.parse(await readFile(written.path, "utf8")) as Record<string, unknown>;
    expect(verifyDocument(onDisk, secret)).toEqual({ ok: true });
    expect(verifyDocument(onDisk, "another-secret-value-x")).toEqual({ ok: false, reason: "mismatch" });
  });

  it("replaces a stale signature given in the input instead of keeping it", async () => {
    const layout = gstackLayout(root);
    const written = await writeDispatchFile(layout, { ...base, source_signature: "0".repeat(64) });
    expect(written.document).not.toHaveProperty("source_signature");
  });

  it("refuses an invalid dispatch and writes nothing", async () => {
    const layout = gstackLayout(root);
    const attempt = writeDispatchFile(layout, { ...base, id: "not-a-dispatch-id" });
    await expect(attempt).rejects.toSatisfy(
      (error: unknown) =>
        ContractError.isInstance(error) && error.issues.some((issue) => issue.path === "id"),
    );
    await expect(readdir(layout.dispatch.incoming)).rejects.toThrow(/ENOENT/);
  });

  it("refuses an id that already exists in incoming and keeps the first file", async () => {
    const layout = gstackLayout(root);
    await writeDispatchFile(layout, base);
    const attempt = writeDispatchFile(layout, { ...base, task: "something else" });
    await expect(attempt).rejects.toThrow(/already exists/);
    const kept = parseJson(
      "dispatch",
      await readFile(join(layout.dispatch.incoming, `${base.id}.json`), "utf8"),
    );
    expect(kept.task).toBe(base.task);
    expect(await readdir(layout.dispatch.tmp)).toEqual([]);
  });

  it("refuses an id the daemon has already claimed, run or finished", async () => {
    const layout = gstackLayout(root);
    await mkdir(layout.dispatch.claimed, { recursive: true });
    await writeFile(layout.dispatch.claimedFile(base.id), "{}");
    await expect(writeDispatchFile(layout, base)).rejects.toThrow(/already exists/);

    const running = { ...base, id: "dispatch-running" };
    await mkdir(layout.dispatch.sessionDir(running.id), { recursive: true });
    await expect(writeDispatchFile(layout, running)).rejects.toThrow(/already exists/);

    const finished = { ...base, id: "dispatch-finished" };
    await mkdir(layout.dispatch.completed, { recursive: true });
    await writeFile(layout.dispatch.completedJson(finished.id), "{}");
    await expect(writeDispatchFile(layout, finished)).rejects.toThrow(/already exists/);
  });

  it("lets exactly one of several concurrent writers of one id win", async () => {
    const layout = gstackLayout(root);
    const results = await Promise.allSettled(
      Array.from({ length: 8 }, (_, index) => writeDispatchFile(layout, { ...base, task: `task ${index}` })),
    );
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    expect(await readdir(layout.dispatch.incoming)).toEqual(["dispatch-test-1.json", "tmp"].sort());
  });
});
