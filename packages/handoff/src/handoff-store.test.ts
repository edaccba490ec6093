import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gstackLayout } from "@gstack/contracts";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HandoffError } from "./handoff-error";
import { findLatestHandoff, listHandoffs, pickUpHandoff, readHandoff, writeHandoff } from "./handoff-store";

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "handoff-store-"));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const base = { from: "gstack", to: "wintermute", project: "acme-baku" };
const now = new Date("2026-04-03T14:30:00Z");

async function writeCheckpoint(project: string, name: string, text: string): Promise<string> {
  const folder = gstackLayout(root).project(project).checkpoints;
  await mkdir(folder, { recursive: true });
  const path = join(folder, `${name}.md`);
  await writeFile(path, text);
  return path;
}

describe("writeHandoff / readHandoff", () => {
  it("writes handoff/{id}.md with a generated id and reads it back", async () => {
    const record = await writeHandoff(
      { ...base, context: "Auth work", resume_prompt: "Go on." },
      { root, now },
    );
    expect(record.ref).toBe("20260403-143000-acme-baku");
    expect(record.path).toBe(gstackLayout(root).handoff.file(record.ref));
    const read = await readHandoff(record.ref, { root });
    expect(read.handoff).toEqual({
      ...base,
      id: record.ref,
      timestamp: "2026-04-03T14:30:00.000Z",
      status: "pending",
      context: "Auth work",
      resume_prompt: "Go on.",
    });
    expect((await readdir(gstackLayout(root).handoff.dir)).filter((name) => name.startsWith("."))).toEqual(
      [],
    );
  });

  it("never overwrites: a taken id gets a new one, also under concurrency", async () => {
    const first = await writeHandoff({ ...base, id: "auth", context: "first" }, { root, now });
    const others = await Promise.all(
      Array.from({ length: 5 }, (_, index) =>
        writeHandoff({ ...base, id: "auth", context: `n${index}` }, { root, now }),
      ),
    );
    expect(first.ref).toBe("auth");
    expect(new Set(others.map((record) => record.ref))).toEqual(
      new Set(["auth-2", "auth-3", "auth-4", "auth-5", "auth-6"]),
    );
    expect((await readHandoff("auth", { root })).handoff.context).toBe("first");
  });

  it("refuses a too-long resume prompt and an unsafe id, writing nothing", async () => {
    await expect(writeHandoff({ ...base, resume_prompt: "x".repeat(4097) }, { root })).rejects.toSatisfy(
      (error: unknown) => HandoffError.isInstance(error) && error.code === "resume-prompt-too-long",
    );
    await expect(writeHandoff({ ...base, id: "../escape" }, { root })).rejects.toThrow(/is not a handoff id/);
    await expect(readdir(gstackLayout(root).handoff.dir)).rejects.toThrow(/ENOENT/);
  });

  it("reports a missing handoff clearly", async () => {
    await expect(readHandoff("nope", { root })).rejects.toThrow(/no handoff "nope"/);
  });
});

describe("listHandoffs / findLatestHandoff / pickUpHandoff", () => {
  it("lists handoffs and checkpoints newest first, filters, and reports broken files", async () => {
    await writeHandoff({ ...base, branch: "main", timestamp: "2026-04-01T00:00:00Z", id: "old" }, { root });
    await writeHandoff({ ...base, branch: "auth", timestamp: "2026-04-05T00:00:00Z", id: "new" }, { root });
    await writeHandoff(
      { ...base, project: "other", timestamp: "2026-04-06T00:00:00Z", id: "elsewhere" },
      { root },
    );
    await writeCheckpoint(
      "acme-baku",
      "20260403-120000-middle",
      "---\nbranch: auth\n---\n## Working on: middle\n",
    );
    await writeFile(join(gstackLayout(root).handoff.dir, "broken.md"), "not a handoff");

    const all = await listHandoffs({ project: "acme-baku" }, { root });
    expect(all.records.map((record) => record.ref)).toEqual([
      "new",
      "checkpoint:acme-baku/20260403-120000-middle",
      "old",
    ]);
    expect(all.problems).toHaveLength(1);
    expect(all.problems[0]!.message).toMatch(/broken\.md:1: must start with '---'/);

    expect((await findLatestHandoff({ project: "acme-baku", branch: "auth" }, { root }))?.ref).toBe("new");
    expect((await findLatestHandoff({ project: "acme-baku", branch: "main" }, { root }))?.ref).toBe("old");
    expect(await findLatestHandoff({ project: "missing" }, { root })).toBeUndefined();
    const withoutCheckpoints = await listHandoffs({ checkpoints: false }, { root });
    expect(withoutCheckpoints.records.map((record) => record.ref)).toEqual(["elsewhere", "new", "old"]);
  });

  it("picks a handoff up once, with an atomic rewrite", async () => {
    const record = await writeHandoff(
      { ...base, context: "## tricky\n", resume_prompt: "Go." },
      { root, now },
    );
    const picked = await pickUpHandoff(record.ref, { by: "wintermute", now }, { root });
    expect(picked.handoff).toMatchObject({
      status: "picked_up",
      picked_up_by: "wintermute",
      picked_up_at: now.toISOString(),
    });
    const reread = await readHandoff(record.ref, { root });
    expect(reread.handoff).toEqual(picked.handoff);
    expect((await listHandoffs({ pending: true }, { root })).records).toEqual([]);
    await expect(pickUpHandoff(record.ref, { by: "someone" }, { root })).rejects.toThrow(
      /already picked up by wintermute at 2026-04-03T14:30:00.000Z/,
    );
  });

  it("lets only one of two concurrent pickers win", async () => {
    const record = await writeHandoff(base, { root, now });
    const results = await Promise.allSettled([
      pickUpHandoff(record.ref, { by: "a" }, { root }),
      pickUpHandoff(record.ref, { by: "b" }, { root }),
    ]);
    expect(results.filter((result) => result.status === "fulfilled")).toHaveLength(1);
    const loser = results.find((result) => result.status === "rejected");
    expect(loser?.reason).toMatchObject({ code: "already-picked-up" });
    expect(await readdir(gstackLayout(root).handoff.dir)).toEqual([`${record.ref}.md`]);
  });

  it("takes over a pick-up lock left by a process that has died", async () => {
    const record = await writeHandoff(base, { root, now });
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
      encoding: "utf8",
    });
    const lock = join(gstackLayout(root).handoff.dir, `.${record.ref}.lock`);
    await writeFile(lock, `${dead.stdout}\n`);
    const picked = await pickUpHandoff(record.ref, { by: "wintermute", now }, { root });
    expect(picked.handoff.status).toBe("picked_up");
    expect(await readdir(gstackLayout(root).handoff.dir)).toEqual([`${record.ref}.md`]);
  });

  it("picks a checkpoint up by importing it, leaving gstack's file untouched", async () => {
    const text =
      "---\nbranch: auth\ntimestamp: 2026-04-03T10:00:00Z\n---\n## Working on: cp\n### Remaining Work\nfinish\n";
    const path = await writeCheckpoint("acme-baku", "20260403-100000-cp", text);
    const ref = "checkpoint:acme-baku/20260403-100000-cp";
    const picked = await pickUpHandoff(ref, { by: "wintermute", now }, { root });
    expect(picked.kind).toBe("handoff");
    expect(picked.handoff).toMatchObject({ source: path, status: "picked_up", what_i_need: "finish" });
    expect(await readFile(path, "utf8")).toBe(text);
    const listed = await listHandoffs({ project: "acme-baku" }, { root });
    expect(listed.records.map((record) => record.ref)).toEqual([picked.ref]);
    await expect(pickUpHandoff(ref, { by: "again" }, { root })).rejects.toThrow(/already picked up/);
  });
});
