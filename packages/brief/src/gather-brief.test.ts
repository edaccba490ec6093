import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OpenWork } from "./brief-types";
import { formatBrief } from "./format-brief";
import { gatherBrief } from "./gather-brief";
import { seedBaku } from "./test-world";

let base: string;
let root: string;
let repo: string;
const now = new Date("2026-11-27T09:00:00Z");
beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), "brief-gather-"));
  root = join(base, "gstack");
  repo = join(base, "code", "baku");
  await seedBaku(root, repo, now);
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

const unlanded: OpenWork = {
  id: "dispatch-20261124T100000-00000001",
  project: "acme-baku",
  state: "awaiting-landing",
  branch: "gstack/dispatch-20261124T100000-00000001",
  ageSeconds: 3 * 86_400,
};

describe("gatherBrief", () => {
  it("briefs 'baku' from everything recorded and drafts the checkpoint's work", async () => {
    const asked: string[] = [];
    const brief = await gatherBrief(
      { project: "baku" },
      {
        root,
        now,
        openWork: async (project) => {
          asked.push(project);
          return [unlanded];
        },
        settings: { defaultBudgetUsd: 5, trustedRepos: [repo], planFirst: (dir) => dir === repo },
      },
    );
    expect(asked).toEqual(["acme-baku"]);
    expect(brief).toMatchObject({ project: "acme-baku", resolvedBy: "name", folder: repo, empty: false });
    expect(brief.sessions.map((session) => session.skill)).toEqual(["investigate", "ship"]);
    expect(brief.checkpoint).toMatchObject({ kind: "checkpoint", branch: "fix/auth" });
    expect(brief.checkpoint?.resumePrompt).toMatch(/401 handler refresh once/);
    expect(brief.learnings.map((learning) => learning.key)).toEqual([
      "token-keychain",
      "retry-once",
      "old-guess",
    ]);
    expect(brief.learnings[2]?.confidence).toBe(3);
    expect(brief.withheld).toBe(1);
    expect(brief.routing).toEqual({
      skills: ["investigate", "review"],
      load: ["docs/auth.md"],
      source: join(root, "routing.yaml"),
    });
    expect(brief.draft).toEqual({
      project: "acme-baku",
      project_dir: repo,
      task: brief.checkpoint?.resumePrompt,
      source: "checkpoint",
      source_ref: brief.checkpoint?.ref,
      handoff_id: brief.checkpoint?.ref,
      base: "fix/auth",
      budget_usd: 5,
      mode: "plan",
      learnings: brief.learnings.map((learning) => learning.text),
    });
    const text = formatBrief(brief, { now, draftId: "draft-x" });
    expect(text).toContain("Last session 16 h ago: investigate in Claude Code on fix/auth (unknown, 45 min)");
    expect(text).toContain(
      "ship dispatched on gstack/dispatch-20261124T100000-00000001 (success, shipped pr:47, 25 min, $2.40)",
    );
    expect(text).toContain(
      "Open work: dispatch-20261124T100000-00000001 finished, not landed on gstack/dispatch-20261124T100000-00000001, 3 days.",
    );
    expect(text).toContain(
      'Newest checkpoint (15 h ago, fix/auth): Debugging the auth token refresh. Resume prompt: "Continue the work saved',
    );
    expect(text).toContain("[9] Auth tokens live in the keychain");
    expect(text).toContain("1 learning(s) withheld");
    expect(text).not.toContain("push to main");
    expect(text).toContain("Routing: use investigate, review; load docs/auth.md.");
    expect(text).toContain(`Drafted dispatch draft-x (not sent)`);
    expect(text).toContain(`in ${repo}, from fix/auth, on a new branch, budget $5, plan first.`);
  });

  it("finds the project from its folder, and the last one worked on", async () => {
    const byFolder = await gatherBrief({ folder: repo }, { root, now });
    expect(byFolder).toMatchObject({ project: "acme-baku", resolvedBy: "folder", folder: repo });
    expect(byFolder.notes).toContain("the dispatch daemon's state was not read, so open work is not shown");
    const last = await gatherBrief({ last: true }, { root, now });
    expect(last).toMatchObject({ project: "acme-widget", resolvedBy: "last" });
    expect(last.noDraft).toBe("there is no checkpoint, handoff or unlanded work to continue");
  });

  it("gives a project with no history one honest sentence", async () => {
    const brief = await gatherBrief({ project: "zanzibar" }, { root, now, openWork: async () => [] });
    expect(brief).toMatchObject({ project: "zanzibar", empty: true });
    expect(brief.draft).toBeUndefined();
    expect(formatBrief(brief, { now })).toBe(
      "Nothing is recorded for zanzibar yet: no sessions, no open work, no checkpoint and no learnings. Say what to work on and it can be dispatched.",
    );
  });

  it("says so when the daemon's state cannot be read, and still briefs", async () => {
    const brief = await gatherBrief(
      { project: "acme-baku" },
      { root, now, openWork: async () => Promise.reject(new Error("socket refused")) },
    );
    expect(brief.openWork).toBeUndefined();
    expect(brief.notes).toContain("the dispatch daemon's state could not be read: socket refused");
    expect(formatBrief(brief, { now })).toContain("Open work: unknown");
  });
});
