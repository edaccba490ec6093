import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type GstackLayout, gstackLayout } from "@gstack/contracts";
import type { WorktreeRecord } from "@gstack/daemon-client";
import {
  type FinishedSummary,
  formatStatus,
  isFinishedSummary,
  landingFile,
  measureWorktree,
  readState,
  readStatus,
  readSummary,
  type SessionState,
  statusJson,
  summaryFile,
  writeState,
} from "@gstack/daemon-client";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { recentEndings } from "./finish/recent-endings";
import { finishedSummarySchema } from "./status-summary-schema";

describe("the quick check of the summary", () => {
  const text = fc.oneof(fc.string(), fc.constantFrom("", "main", "refs/heads/x"));
  const count = fc.oneof(fc.nat(), fc.constantFrom(0, Number.MAX_SAFE_INTEGER));
  const optional = <T>(value: fc.Arbitrary<T>) => fc.option(value, { nil: undefined });
  const tree = fc.record(
    {
      repo: text,
      path: text,
      cwd: text,
      branch: text,
      base: text,
      base_sha: text,
      land_into: text,
      created_at: text,
    },
    { requiredKeys: ["repo", "path", "cwd", "branch", "base", "base_sha"] },
  );
  const measure = fc.record(
    { commits: count, disk_bytes: count, tip: text, into_tip: text },
    { requiredKeys: ["commits", "disk_bytes"] },
  );
  const state = fc.record({
    id: text,
    project: text,
    status: fc.constant("finished"),
    queued_at: text,
    updated_at: text,
    worktree: optional(tree),
    worktree_measure: optional(measure),
  });
  const ending = fc.record(
    {
      dispatch_id: text,
      status: text,
      project: text,
      commits: count,
      pr: text,
      error_kind: text,
      error: text,
      finished_at: text,
    },
    { requiredKeys: ["dispatch_id", "status"] },
  );
  const summary = fc.record({
    version: fc.constant(1),
    sessions: fc.dictionary(text, fc.record({ stamp: text, state }), { maxKeys: 4 }),
    endings: optional(
      fc.dictionary(text, fc.record({ stamp: text, ending: fc.option(ending, { nil: null }) }), {
        maxKeys: 3,
      }),
    ),
  });
  /** Every place in a JSON value, as the keys that lead there. */
  const places = (value: unknown, at: string[] = []): string[][] =>
    typeof value === "object" && value !== null
      ? Object.entries(value).flatMap(([key, item]) => [[...at, key], ...places(item, [...at, key])])
      : [];
  /** A whole summary, or one with one place (of any depth) replaced by any JSON value or removed. */
  const nearlySummary = fc
    .tuple(summary, fc.option(fc.tuple(fc.nat(), fc.option(fc.jsonValue(), { nil: undefined }))))
    .map(([whole, change]) => {
      const value = JSON.parse(JSON.stringify(whole)) as Record<string, unknown>;
      const all = places(value);
      if (!change || all.length === 0) return value;
      const path = all[change[0] % all.length] as string[];
      let parent = value;
      for (const key of path.slice(0, -1)) parent = parent[key] as Record<string, unknown>;
      const last = path[path.length - 1] as string;
      if (change[1] === undefined) delete parent[last];
      else parent[last] = change[1];
      return value;
    });

  it("judges every JSON value as the summary's schema does", () => {
    fc.assert(
      fc.property(fc.oneof(nearlySummary, fc.jsonValue()), (value) => {
        // The value as it comes back from the file: what JSON.parse makes of it.
        const read: unknown = JSON.parse(JSON.stringify(value) ?? "null");
        expect(isFinishedSummary(read)).toBe(finishedSummarySchema.safeParse(read).success);
      }),
      { numRuns: 3000 },
    );
  });

  it("takes a whole summary and refuses one field wrong", () => {
    const whole: FinishedSummary = {
      version: 1,
      sessions: {
        "dispatch-a": {
          stamp: "1:2:3:4",
          state: {
            id: "dispatch-a",
            project: "p",
            status: "finished",
            queued_at: "q",
            updated_at: "u",
            worktree: { repo: "r", path: "w", cwd: "w", branch: "b", base: "main", base_sha: "s" },
            worktree_measure: { commits: 1, disk_bytes: 10 },
          },
        },
      },
    };
    expect(isFinishedSummary(whole)).toBe(true);
    expect(finishedSummarySchema.safeParse(whole).success).toBe(true);
    const broken = structuredClone(whole) as unknown as {
      sessions: Record<string, { state: { worktree_measure: { commits: number } } }>;
    };
    (
      broken.sessions["dispatch-a"] as { state: { worktree_measure: { commits: number } } }
    ).state.worktree_measure.commits = -1;
    expect(isFinishedSummary(broken)).toBe(false);
    expect(finishedSummarySchema.safeParse(broken).success).toBe(false);
  });
});

let base: string;
let layout: GstackLayout;
let repo: string;
/** Long enough after every write that each state counts as settled. */
const later = () => new Date(Date.now() + 60_000);

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-C", cwd, "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    encoding: "utf8",
  }).trim();

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-finished-summary-"));
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

/** A finished dispatch with a real worktree holding one commit, measured as finishing does. */
async function finished(id: string): Promise<SessionState> {
  const path = join(layout.root, "worktrees", "proj", id);
  const branch = `gstack/${id}`;
  git(repo, "worktree", "add", "-q", "-b", branch, path, "main");
  await writeFile(join(path, `${id}.txt`), "work\n");
  git(path, "add", "-A");
  git(path, "commit", "-q", "-m", id);
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
  return state;
}

async function waiting(): Promise<string[]> {
  const status = await readStatus(layout, later());
  const json = statusJson(status);
  const listed = (json.awaiting_landing ?? []).map((item) => item.id).sort();
  // The text lists the same ones.
  const text = formatStatus(status);
  for (const id of listed) expect(text).toContain(`⏸ ${id}  `);
  expect(text.match(/⏸ /g)?.length ?? 0).toBe(listed.length);
  return listed;
}

describe("status with the summary of finished sessions", () => {
  it("writes the summary, then takes unchanged finished states from it", async () => {
    await finished("dispatch-a");
    await finished("dispatch-b");
    expect(await waiting()).toEqual(["dispatch-a", "dispatch-b"]);
    const summary = readSummary(layout);
    expect(Object.keys(summary.sessions).sort()).toEqual(["dispatch-a", "dispatch-b"]);
    expect((await stat(summaryFile(layout))).mode & 0o777).toBe(0o600);
    // What the summary says is what status shows while the state file is unchanged...
    const entry = summary.sessions["dispatch-a"];
    if (!entry) throw new Error("no entry");
    entry.state.project = "from-the-summary";
    await writeFile(summaryFile(layout), JSON.stringify(summary));
    expect(formatStatus(await readStatus(layout, later()))).toContain("dispatch-a  from-the-summary");
    // ...and the state file's own word once it is written again.
    const state = await readState(layout, "dispatch-a");
    if (!state) throw new Error("no state");
    await writeState(layout, state);
    const text = formatStatus(await readStatus(layout, later()));
    expect(text).not.toContain("from-the-summary");
    expect(text).toContain("dispatch-a  proj");
  });

  it("is right when the summary is torn, not a summary, or missing", async () => {
    await finished("dispatch-a");
    await finished("dispatch-b");
    for (const content of [
      '{"version":1,"sessions":{"dispatch-a":',
      '{"version":1,"sessions":[]}',
      "",
      "null",
    ]) {
      await writeFile(summaryFile(layout), content);
      expect(await waiting()).toEqual(["dispatch-a", "dispatch-b"]);
      // Written again whole.
      expect(isFinishedSummary(JSON.parse(await readFile(summaryFile(layout), "utf8")))).toBe(true);
    }
    await rm(summaryFile(layout));
    expect(await waiting()).toEqual(["dispatch-a", "dispatch-b"]);
  });

  it("is right after a crash left the summary behind the states", async () => {
    await finished("dispatch-a");
    await finished("dispatch-b");
    expect(await waiting()).toEqual(["dispatch-a", "dispatch-b"]);
    const old = await readFile(summaryFile(layout), "utf8");
    // Since the summary was written: one more finished, one run again, one folder removed; the
    // summary is put back as a daemon killed before anyone read the states again would leave it.
    await finished("dispatch-c");
    const again = await readState(layout, "dispatch-a");
    if (!again) throw new Error("no state");
    await writeState(layout, { ...again, status: "queued", updated_at: new Date().toISOString() });
    await rm(layout.dispatch.sessionDir("dispatch-b"), { recursive: true });
    await writeFile(summaryFile(layout), old);
    const status = await readStatus(layout, later());
    expect(statusJson(status).awaiting_landing?.map((item) => item.id)).toEqual(["dispatch-c"]);
    expect(status.sessions.queue?.map((item) => item.id)).toEqual(["dispatch-a"]);
    expect(Object.keys(readSummary(layout).sessions)).toEqual(["dispatch-c"]);
  });

  it("drops a landed dispatch whatever the summary says", async () => {
    await finished("dispatch-a");
    await finished("dispatch-b");
    expect(await waiting()).toEqual(["dispatch-a", "dispatch-b"]);
    await mkdir(join(landingFile(layout, "dispatch-a"), ".."), { recursive: true });
    await writeFile(landingFile(layout, "dispatch-a"), "{}");
    expect(await waiting()).toEqual(["dispatch-b"]);
  });

  it("reads a state written moments ago from its file, not from a summary that could match it", async () => {
    await finished("dispatch-a");
    // Taken now, nothing is settled: no summary is written and every state is read.
    await readStatus(layout, new Date());
    expect(readSummary(layout).sessions).toEqual({});
    expect(await waiting()).toEqual(["dispatch-a"]);
  });
});

describe("recent endings with the summary", () => {
  const report = (id: string, fields: Record<string, unknown> = {}) =>
    writeFile(
      layout.dispatch.completedJson(id),
      JSON.stringify({ dispatch_id: id, status: "completed", duration: 5, project: "proj", ...fields }),
    );

  it("judges each report by its schema once, and again only when it is written again", async () => {
    await mkdir(layout.dispatch.completed, { recursive: true });
    await report("dispatch-a", { commits: 2 });
    await report("dispatch-bad", { status: "no-such-status" });
    const first = await recentEndings(layout, 5, Date.now() + 60_000);
    expect(first.map((ending) => ending.completion.dispatch_id)).toEqual(["dispatch-a"]);
    const summary = readSummary(layout);
    expect(summary.endings?.["dispatch-bad.json"]?.ending).toBeNull();
    const kept = summary.endings?.["dispatch-a.json"];
    if (!kept?.ending) throw new Error("no ending kept");
    // The kept judgement stands while the file is unchanged...
    kept.ending.project = "from-the-summary";
    await writeFile(summaryFile(layout), JSON.stringify(summary));
    expect((await recentEndings(layout, 5, Date.now() + 60_000))[0]?.completion.project).toBe(
      "from-the-summary",
    );
    // ...and a report written again is read and judged again: one made invalid is dropped.
    await rm(layout.dispatch.completedJson("dispatch-a"));
    await report("dispatch-a", { commits: -1 });
    expect(await recentEndings(layout, 5, Date.now() + 60_000)).toEqual([]);
    // A torn summary changes nothing shown.
    await report("dispatch-c");
    await writeFile(summaryFile(layout), '{"version":1,"sessions":{},"endings":{"dispatch-c.json":');
    expect(
      (await recentEndings(layout, 5, Date.now() + 60_000)).map((e) => e.completion.dispatch_id),
    ).toEqual(["dispatch-c"]);
  });

  it("keeps the summary's sessions when it keeps endings, and its endings when it keeps sessions", async () => {
    await finished("dispatch-a");
    await mkdir(layout.dispatch.completed, { recursive: true });
    await report("dispatch-a");
    await readStatus(layout, later());
    await recentEndings(layout, 5, Date.now() + 60_000);
    await finished("dispatch-b");
    await readStatus(layout, later());
    const summary = readSummary(layout);
    expect(Object.keys(summary.sessions).sort()).toEqual(["dispatch-a", "dispatch-b"]);
    expect(Object.keys(summary.endings ?? {})).toEqual(["dispatch-a.json"]);
  });
});
