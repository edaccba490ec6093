import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Dispatch, gstackLayout } from "@gstack/contracts";
import type { SessionState } from "@gstack/daemon-client";
import { listWorktrees, worktreePath } from "@gstack/daemon-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DaemonContext } from "../daemon-context";
import { initRepository } from "../test-support";
import { materializeWorktree } from "./materialize";
import { planWorktree } from "./plan";
import { prepareWorkspace } from "./prepare";

let base: string;
let repo: string;
let root: string;
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-C", cwd, "-c", "user.name=t", "-c", "user.email=t@t", ...args], {
    encoding: "utf8",
  }).trim();

beforeEach(async () => {
  base = await realpath(await mkdtemp(join(tmpdir(), "gstack-worktree-parallel-")));
  repo = join(base, "repo");
  root = join(base, "state");
  initRepository(repo);
});

afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

const plan = (id: string) =>
  planWorktree({ stateRoot: root, project: "acme", dispatchId: id, projectDir: repo, now: new Date() });

describe("worktrees of one repository made side by side", () => {
  it("are all checked out while each waits for the others inside its checkout", async () => {
    const count = 4;
    // A smudge filter that holds each checkout until every creation has reached its own: made
    // one at a time, the first would wait for the others forever (and fail after a minute).
    const barrier = join(base, "barrier");
    await mkdir(barrier);
    const filter = join(base, "barrier.sh");
    await writeFile(
      filter,
      `#!/bin/sh
touch "${barrier}/$$"
tries=0
while [ "$(ls "${barrier}" | wc -l)" -lt ${count} ]; do
  tries=$((tries + 1)); [ $tries -gt 600 ] && exit 1
  sleep 0.1
done
cat
`,
      { mode: 0o755 },
    );
    git(repo, "config", "filter.barrier.smudge", filter);
    git(repo, "config", "filter.barrier.clean", "cat");
    git(repo, "config", "filter.barrier.required", "true");
    await writeFile(join(repo, ".gitattributes"), "*.held filter=barrier\n");
    await writeFile(join(repo, "file.held"), "held until all are checking out\n");
    git(repo, "add", "-A");
    git(repo, "commit", "-q", "-m", "a filtered file");

    // The daemon's own step before each agent starts, for dispatches into one repository.
    const layout = gstackLayout(root);
    await mkdir(layout.dispatch.sessions, { recursive: true });
    const audited: string[] = [];
    const context = {
      layout,
      settings: {},
      now: () => new Date(),
      log: () => {},
      audit: async (event: string) => {
        audited.push(event);
      },
    } as unknown as DaemonContext;
    const states: SessionState[] = Array.from({ length: count }, (_, index) => ({
      id: `dispatch-p${index}`,
      project: "acme",
      project_dir: repo,
      agent: "codex",
      status: "running",
      claimed_file: join(base, `dispatch-p${index}.md`),
      first_seen: new Date().toISOString(),
      queued_at: new Date().toISOString(),
      attempt: 1,
      retries: 0,
      include_learnings: false,
      updated_at: new Date().toISOString(),
    }));
    await Promise.all(
      states.map((state) => mkdir(layout.dispatch.sessionDir(state.id), { recursive: true })),
    );
    await Promise.all(states.map((state) => prepareWorkspace(context, state, {} as Dispatch)));
    expect((await readdir(barrier)).length).toBe(count);
    expect(audited.filter((event) => event === "worktree_created")).toHaveLength(count);
    const records = states.map((state) => state.worktree as NonNullable<SessionState["worktree"]>);
    const listed = await listWorktrees(repo);
    for (const record of records) {
      expect(await readFile(join(record.path, "file.held"), "utf8")).toBe(
        "held until all are checking out\n",
      );
      const entry = listed.find((candidate) => candidate.path === record.path);
      expect(entry).toMatchObject({ branch: record.branch });
      // Checked out and let go: no worktree is left locked.
      expect(entry?.lockReason).toBeUndefined();
      expect(git(record.path, "status", "--porcelain")).toBe("");
    }
  }, 120_000);

  it("many at once into one repository all end made and registered, each on its own branch", async () => {
    await writeFile(join(repo, "a.txt"), "a\n");
    git(repo, "add", "-A");
    git(repo, "commit", "-q", "-m", "a file");
    const count = 12;
    const records = await Promise.all(
      Array.from({ length: count }, (_, index) => plan(`dispatch-many-${index}`)),
    );
    await Promise.all(records.map((record) => materializeWorktree(record)));
    const listed = await listWorktrees(repo);
    expect(listed).toHaveLength(count + 1);
    for (const [index, record] of records.entries()) {
      expect(record.path).toBe(worktreePath(root, "acme", `dispatch-many-${index}`));
      expect(await readFile(join(record.path, "a.txt"), "utf8")).toBe("a\n");
      expect(listed.find((entry) => entry.path === record.path)).toMatchObject({
        branch: record.branch,
        initializing: false,
      });
      expect(listed.find((entry) => entry.path === record.path)?.lockReason).toBeUndefined();
    }
    // Made again (a resumed run) finds each as made.
    expect(await Promise.all(records.map((record) => materializeWorktree(record)))).toEqual(
      records.map(() => false),
    );
  }, 120_000);

  it("a registration cut short before git made the folder is cleared and made again", async () => {
    const record = await plan("dispatch-cut");
    await materializeWorktree(record);
    // What a kill between git's record and its folder leaves: the record, no folder.
    await rm(record.path, { recursive: true, force: true });
    expect(await materializeWorktree(record)).toBe(true);
    expect(git(record.path, "rev-parse", "--abbrev-ref", "HEAD")).toBe(record.branch);
    expect((await listWorktrees(repo)).filter((entry) => entry.path === record.path)).toHaveLength(1);
  });
});
