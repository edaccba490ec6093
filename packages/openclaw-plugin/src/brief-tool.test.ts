import { execFile } from "node:child_process";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { createActivityLog } from "@gstack/activity";
import { listHandoffs } from "@gstack/handoff";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Daemon } from "../../../apps/daemon/src/index";
import { loadBudget, waitUntil } from "../../../vitest.load-budget";
import { runBriefTool, runSendDraftTool } from "./brief-tool";
import { type GstackWorld, makeGstackWorld } from "./openclaw-world";
import { type PluginSettings, resolvePluginSettings } from "./plugin-settings";

const run = promisify(execFile);
let world: GstackWorld;
let settings: PluginSettings;
let openclawState: string;
let daemon: Daemon | undefined;
const session = { sessionKey: "agent:main:main", agentId: "main" };
const textOf = (result: { content: { text: string }[] }) => result.content[0]?.text ?? "";

/** Yesterday's work on acme-widget: a session, a checkpoint on fix/auth, learnings. */
async function seedHistory(now: Date): Promise<void> {
  const yesterday = new Date(now.getTime() - 20 * 3_600_000).toISOString();
  await createActivityLog({ root: world.root, now: () => now }).append(
    [
      {
        ts: yesterday,
        project: "acme-widget",
        skill: "investigate",
        duration: 1800,
        source: "timeline",
        branch: "fix/auth",
      },
    ],
    { backfill: true },
  );
  await run("git", ["-C", world.repo, "branch", "fix/auth"]);
  const project = world.layout.project("acme-widget");
  await mkdir(project.checkpoints, { recursive: true });
  await writeFile(
    join(project.checkpoints, "20261126-130000-auth.md"),
    `---\nbranch: fix/auth\ntimestamp: ${yesterday}\n---\n## Working on: Debugging auth\n\n### Remaining Work\n- Retry the refresh once on a 401\n`,
  );
  await writeFile(
    project.learnings,
    `${JSON.stringify({ skill: "investigate", type: "pitfall", key: "keychain", insight: "Tokens live in the keychain", confidence: 9, source: "user-stated", ts: yesterday })}\n`,
  );
  await writeFile(
    world.layout.config,
    `dispatch:\n  trusted_repos:\n    - ${world.base}\n  default_budget_usd: 3\n  plan_first_repos:\n    - ${world.repo}\n`,
  );
}

beforeEach(async () => {
  world = await makeGstackWorld();
  openclawState = await mkdtemp(join(tmpdir(), "openclaw-state-"));
  settings = resolvePluginSettings({ gstackHome: world.root }, openclawState);
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.remove();
  await rm(openclawState, { recursive: true, force: true });
});

describe("gstack_brief and gstack_send_draft", { timeout: loadBudget(60_000) }, () => {
  it("brief the project and keep a draft; only the person's word sends it, once, with the draft's fields", async () => {
    const now = new Date();
    await seedHistory(now);
    // A stand-in for Claude Code that works until it is stopped.
    const claude = join(world.base, "claude-stand-in");
    await writeFile(claude, "#!/bin/sh\nexec sleep 600\n");
    await chmod(claude, 0o755);
    daemon = new Daemon({
      root: world.root,
      claudeBinary: claude,
      openclawWorkspace: false,
      settings: { max_concurrent: 1 },
    });
    await daemon.start();

    const brief = await runBriefTool(settings, session, { project: "widget" }, now);
    const text = textOf(brief);
    const draftId = String(brief.details.draft_id);
    expect(brief.details).toMatchObject({
      ok: true,
      project: "acme-widget",
      empty: false,
      sessions: 1,
      open_work: 0,
    });
    expect(draftId).toMatch(/^draft-/);
    expect(text).toContain("Last session 20 h ago: investigate in Claude Code on fix/auth");
    expect(text).toContain("Newest checkpoint (20 h ago, fix/auth): Debugging auth.");
    expect(text).toContain("[9] Tokens live in the keychain");
    expect(text).toContain(`Drafted dispatch ${draftId} (not sent)`);
    expect(text).toContain(`in ${world.repo}, from fix/auth, on a new branch, budget $3, plan first.`);
    expect(text).toContain(`only on their yes call gstack_send_draft with draft_id ${draftId}`);
    // Nothing was sent by the brief.
    expect(daemon.snapshot().running).toEqual([]);
    expect(await readdir(world.layout.dispatch.claimed).catch(() => [])).toEqual([]);

    const [first, second] = await Promise.all([
      runSendDraftTool(settings, session, { draft_id: draftId }),
      runSendDraftTool(settings, session, { draft_id: draftId }),
    ]);
    const third = await runSendDraftTool(settings, session, { draft_id: draftId });
    const sent = [first, second].find((result) => result.details.already_sent === undefined)!;
    expect(sent.details).toMatchObject({ ok: true, via: "service-api", draft_id: draftId });
    const id = String(sent.details.dispatch_id);
    for (const again of [[first, second].find((result) => result !== sent)!, third]) {
      expect(again.details).toMatchObject({ ok: true, already_sent: true, dispatch_id: id });
      expect(textOf(again)).toBe(
        `${draftId} was already sent as ${id}; nothing was sent again. Its report comes to the session that sent it.`,
      );
    }
    expect(await readdir(world.layout.dispatch.claimed)).toEqual([`${id}.json`]);
    const claimed = JSON.parse(await readFile(world.layout.dispatch.claimedFile(id), "utf8"));
    expect(claimed).toMatchObject({
      id,
      project: "acme-widget",
      project_dir: world.repo,
      base: "fix/auth",
      budget_usd: 3,
      mode: "plan",
      handoff_id: "checkpoint:acme-widget/20261126-130000-auth",
      learnings: ["Tokens live in the keychain"],
      reply_to: { runtime: "openclaw", session_key: "agent:main:main", agent_id: "main" },
    });
    expect(claimed.task).toMatch(/Debugging auth[\s\S]*Retry the refresh once on a 401/);

    // The checkpoint it continues is picked up: the next brief does not draft it again.
    const { records } = await listHandoffs({ project: "acme-widget" }, { root: world.root });
    expect(records.map((record) => record.handoff.status)).toEqual(["picked_up"]);

    // The dispatch is the project's open work now, read from the daemon's own state.
    await waitUntil(async () => (daemon?.snapshot().running.includes(id) ? true : undefined), {
      idleMs: 20_000,
      what: "the dispatch running",
    });
    const later = await runBriefTool(settings, session, { project: "acme-widget" });
    expect(later.details).toMatchObject({ open_work: 1 });
    expect(later.details).not.toHaveProperty("draft_id");
    expect(textOf(later)).toMatch(new RegExp(`Open work: ${id} running, (just now|\\d+ min)\\.`));
  });

  it("send a scheduled brief's draft on a yes without its id from the person it went to; ask which when two wait", async () => {
    const now = new Date();
    await seedHistory(now);
    // The scheduled run: its own session, delivering to the person's channel.
    const scheduled = {
      sessionKey: "agent:main:cron:job-1:run:run-1",
      agentId: "main",
      route: { channel: "telegram", to: "42" },
    };
    // The person's chat: another session, on the same route (the channel names them user:42).
    const person = {
      sessionKey: "agent:main:telegram:direct:42",
      agentId: "main",
      route: { channel: "telegram", to: "user:42" },
    };
    const stranger = { sessionKey: "agent:main:telegram:direct:7", route: { channel: "telegram", to: "7" } };
    const incoming = async () =>
      (await readdir(world.layout.dispatch.incoming).catch(() => [] as string[])).filter(
        (name) => name.endsWith(".json") && !name.startsWith("."),
      );

    const brief = await runBriefTool(settings, scheduled, { project: "widget" }, now);
    const draftId = String(brief.details.draft_id);
    const kept = JSON.parse(
      await readFile(join(openclawState, "gstack", "drafts", `${draftId}.json`), "utf8"),
    );
    expect(kept.delivered_to).toEqual({ channel: "telegram", to: "42" });
    expect(kept.reply_to).toMatchObject({ session_key: scheduled.sessionKey });

    // Someone else's yes finds nothing of theirs.
    const theirs = await runSendDraftTool(settings, stranger, {}, now);
    expect(textOf(theirs)).toBe(
      "Nothing was sent: no draft was shown to this person in the last 12 h. Call gstack_brief for a new one.",
    );
    expect(await incoming()).toEqual([]);

    const yes = await runSendDraftTool(settings, person, {}, now);
    expect(yes.details).toMatchObject({
      ok: true,
      via: "file",
      draft_id: draftId,
      dispatch_id: kept.dispatch_id,
    });
    expect(await incoming()).toEqual([`${kept.dispatch_id}.json`]);
    const dispatch = JSON.parse(
      await readFile(join(world.layout.dispatch.incoming, `${kept.dispatch_id}.json`), "utf8"),
    );
    expect(dispatch).toMatchObject({
      id: kept.dispatch_id,
      task: kept.task,
      project: "acme-widget",
      base: "fix/auth",
      handoff_id: kept.source_ref,
      // The report goes to the chat that said yes, not to the scheduled run's session.
      reply_to: { runtime: "openclaw", session_key: person.sessionKey, agent_id: "main" },
    });

    const again = await runSendDraftTool(settings, person, {}, now);
    expect(textOf(again)).toBe(`${draftId} was already sent as ${kept.dispatch_id}; nothing was sent again.`);
    expect(again.details).toMatchObject({ already_sent: true });
    expect(await incoming()).toHaveLength(1);

    // Two scheduled briefs with a new checkpoint: two drafts wait, and a plain yes sends neither.
    const project = world.layout.project("acme-widget");
    await writeFile(
      join(project.checkpoints, "20261127-080000-tests.md"),
      `---\nbranch: fix/auth\ntimestamp: ${new Date(now.getTime() - 3_600_000).toISOString()}\n---\n## Working on: Testing the refresh\n`,
    );
    const one = String(
      (await runBriefTool(settings, scheduled, { project: "widget" }, now)).details.draft_id,
    );
    const later = new Date(now.getTime() + 60_000);
    const two = String(
      (await runBriefTool(settings, scheduled, { project: "widget" }, later)).details.draft_id,
    );
    const ask = await runSendDraftTool(settings, person, {}, later);
    expect(ask.details).toMatchObject({ ok: true, sent: false, waiting: 2 });
    expect(textOf(ask).split("\n")).toEqual([
      "Nothing was sent: 2 drafts are waiting for the person's word here. Ask which one to send, then call gstack_send_draft with its draft_id:",
      `- ${two}: acme-widget, "Continue the work saved in the gstack checkpoint "Testing the refresh" (project acme-widget, branch fix/auth). Check…" (drafted 0 min ago)`,
      `- ${one}: acme-widget, "Continue the work saved in the gstack checkpoint "Testing the refresh" (project acme-widget, branch fix/auth). Check…" (drafted 1 min ago)`,
    ]);
    expect(await incoming()).toHaveLength(1);
    // Named, one is sent.
    const named = await runSendDraftTool(settings, person, { draft_id: one }, later);
    expect(named.details).toMatchObject({ ok: true, draft_id: one });
    expect(await incoming()).toHaveLength(2);
  });

  it("say so in one sentence for a project with nothing recorded, and draft nothing", async () => {
    const brief = await runBriefTool(settings, session, { project: "zanzibar" });
    expect(textOf(brief)).toBe(
      "Nothing is recorded for zanzibar yet: no sessions, no open work, no checkpoint and no learnings. Say what to work on and it can be dispatched.",
    );
    expect(brief.details).toMatchObject({ ok: true, empty: true });
    expect(brief.details).not.toHaveProperty("draft_id");
    expect(await readdir(join(openclawState, "gstack", "drafts")).catch(() => [])).toEqual([]);
  });

  it("refuse a draft id never kept, and both a project and a folder at once", async () => {
    expect(textOf(await runSendDraftTool(settings, session, { draft_id: "draft-none" }))).toBe(
      "Nothing was sent: no draft draft-none is kept. Call gstack_brief for a new draft.",
    );
    expect(textOf(await runBriefTool(settings, session, { project: "a", folder: "/b" }))).toBe(
      "gstack_brief was not run: give a project or a folder, not both.",
    );
  });
});
