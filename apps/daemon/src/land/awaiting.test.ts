import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type GstackLayout, gstackLayout, parseValue } from "@gstack/contracts";
import type { WorktreeRecord } from "@gstack/daemon-client";
import {
  formatStatus,
  measureWorktree,
  readState,
  readStatus,
  type SessionState,
  statusJson,
  writeState,
} from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

let base: string;
let layout: GstackLayout;
let repo: string;

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-C", cwd, "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    encoding: "utf8",
  }).trim();

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-awaiting-"));
  layout = gstackLayout(join(base, "state"));
  await mkdir(layout.dispatch.incoming, { recursive: true });
  repo = join(base, "repo");
  await mkdir(repo);
  git(repo, "init", "-q", "-b", "main");
  await writeFile(join(repo, "a.txt"), "a\n");
  git(repo, "add", "a.txt");
  git(repo, "commit", "-q", "-m", "first");
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

/** A finished dispatch with a real worktree on its own branch, measured as finishing does. */
async function finished(id: string, commit: boolean): Promise<WorktreeRecord> {
  const path = join(layout.root, "worktrees", "proj", id);
  const branch = `gstack/${id}`;
  git(repo, "worktree", "add", "-q", "-b", branch, path, "main");
  if (commit) {
    await writeFile(join(path, `${id}.txt`), "work\n");
    git(path, "add", "-A");
    git(path, "commit", "-q", "-m", id);
  }
  const tree: WorktreeRecord = {
    repo,
    path,
    cwd: path,
    branch,
    base: "main",
    base_sha: git(repo, "rev-parse", "main"),
    land_into: "main",
    created_at: "2026-11-27T00:00:00.000Z",
  };
  const measure = await measureWorktree(tree);
  if (!measure) throw new Error("git could not measure the worktree");
  const state: SessionState = {
    id,
    project: "proj",
    project_dir: repo,
    agent: "claude",
    status: "finished",
    claimed_file: join(layout.dispatch.incoming, `${id}.md`),
    first_seen: "2026-11-27T00:00:00.000Z",
    queued_at: "2026-11-27T00:00:00.000Z",
    attempt: 1,
    retries: 0,
    include_learnings: false,
    worktree: tree,
    worktree_measure: measure,
    updated_at: "2026-11-27T00:00:00.000Z",
  };
  await writeState(layout, state);
  return tree;
}

describe("what awaits landing, from the measure taken at finish", () => {
  it("lists both groups in the text and in the JSON, which the list-sessions schema takes", async () => {
    await finished("dispatch-work", true);
    await finished("dispatch-empty", false);
    const status = await readStatus(layout, new Date("2026-11-27T01:00:00.000Z"));
    const text = formatStatus(status);
    expect(text).toContain("1 awaiting landing");
    expect(text).toMatch(/⏸ dispatch-work {2}proj {2}gstack\/dispatch-work → main {2}1h ago {2}\d+ KiB/);
    expect(text).toContain("1 with nothing to land");
    expect(text).toMatch(/∅ dispatch-empty {2}proj {2}gstack\/dispatch-empty {2}1h ago/);
    const json = parseValue("list-sessions", JSON.parse(JSON.stringify(statusJson(status))));
    expect(json.awaiting_landing?.map((item) => item.id)).toEqual(["dispatch-work"]);
    expect(json.nothing_to_land?.map((item) => item.id)).toEqual(["dispatch-empty"]);
    expect(json.awaiting_landing?.[0]).toMatchObject({
      project: "proj",
      branch: "gstack/dispatch-work",
      base: "main",
      age_seconds: 3600,
      worktree: join(layout.root, "worktrees", "proj", "dispatch-work"),
    });
    expect(json.awaiting_landing?.[0]?.disk_bytes).toBeGreaterThan(0);
    expect(json.awaiting_landing?.[0]).not.toHaveProperty("nothing");
  });

  it("does not walk the worktree: a file added after the finish does not change its size", async () => {
    const tree = await finished("dispatch-work", true);
    const before = (await readStatus(layout)).awaiting?.[0]?.disk_bytes;
    await writeFile(join(tree.path, "big.bin"), Buffer.alloc(4 * 1024 * 1024));
    expect((await readStatus(layout)).awaiting?.[0]?.disk_bytes).toBe(before);
    await rm(tree.path, { recursive: true, force: true });
    expect((await readStatus(layout)).awaiting?.[0]?.disk_bytes).toBe(0);
  });

  it("counts again when a branch moved since the measure", async () => {
    const empty = await finished("dispatch-empty", false);
    const work = await finished("dispatch-work", true);
    // A commit on the empty one's branch: it now has something to land.
    await writeFile(join(empty.path, "late.txt"), "late\n");
    git(empty.path, "add", "-A");
    git(empty.path, "commit", "-q", "-m", "late");
    // The work merged into main by hand: nothing left to land.
    git(repo, "merge", "-q", "--ff-only", work.branch);
    const json = statusJson(await readStatus(layout));
    expect(json.awaiting_landing?.map((item) => item.id)).toEqual(["dispatch-empty"]);
    expect(json.nothing_to_land?.map((item) => item.id)).toEqual(["dispatch-work"]);
  });

  it("says the size was not measured for a dispatch that finished before measures were kept", async () => {
    await finished("dispatch-old", true);
    const state = await readState(layout, "dispatch-old");
    if (!state) throw new Error("no state");
    delete state.worktree_measure;
    await writeState(layout, state);
    const status = await readStatus(layout);
    expect(status.awaiting?.[0]).toMatchObject({ id: "dispatch-old" });
    expect(status.awaiting?.[0]).not.toHaveProperty("disk_bytes");
    expect(status.awaiting?.[0]).not.toHaveProperty("nothing");
    expect(formatStatus(status)).toContain("size not measured");
  });
});
