import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Daemon } from "../../../apps/daemon/src/index";
import { loadBudget, waitUntil } from "../../../vitest.load-budget";
import { runAnswerTool } from "./answer-tool";
import { runDispatchTool } from "./dispatch-tool";
import { type GstackWorld, makeGstackWorld, pluginPackageDir } from "./openclaw-world";
import { type PluginSettings, resolvePluginSettings } from "./plugin-settings";

/** The real Claude Code CLI, installed for the daemon's own tests. */
const claude = join(pluginPackageDir, "..", "..", "apps", "daemon", "node_modules", ".bin", "claude");

let world: GstackWorld;
let settings: PluginSettings;
let openclawState: string;
let home: string;
let model: ScriptedModel | undefined;
let daemon: Daemon | undefined;
const session = { sessionKey: "agent:main:main", agentId: "main" };
const textOf = (result: { content: { text: string }[] }) => result.content[0]?.text ?? "";

beforeEach(async () => {
  world = await makeGstackWorld();
  openclawState = await mkdtemp(join(tmpdir(), "openclaw-state-"));
  home = await mkdtemp(join(tmpdir(), "gstack-claude-home-"));
  settings = resolvePluginSettings({ gstackHome: world.root }, openclawState);
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await model?.close();
  model = undefined;
  await world.remove();
  await rm(openclawState, { recursive: true, force: true });
  await rm(home, { recursive: true, force: true });
});

/** Until the file's text satisfies `predicate`, as long as the machine's load allows. */
function waitForFile(path: string, predicate: (text: string) => boolean): Promise<string> {
  return waitUntil(
    async () => {
      const text = await readFile(path, "utf8").catch(() => "");
      return predicate(text) ? text : undefined;
    },
    { idleMs: 90_000, what: `waiting for ${path}` },
  );
}

describe("the gstack_answer tool", { timeout: loadBudget(120_000) }, () => {
  it("approves a waiting plan, which the daemon then carries out; a second answer is refused", async () => {
    model = await startScriptedModel({
      script: [
        scripted.text("## Plan\n1. Add notes.txt.\n2. Commit it."),
        scripted.write("notes.txt", "notes\n"),
        scripted.bash("git add notes.txt"),
        scripted.bash("git commit -m 'Add notes.txt'"),
        scripted.text("Done.\n\n## What shipped\n- notes.txt\n## Needs human judgment\n- None"),
      ],
    });
    daemon = new Daemon({
      root: world.root,
      claudeBinary: claude,
      openclawWorkspace: false,
      agentEnv: { ...model.claudeEnv(home), CLAUDE_CODE_MAX_RETRIES: "0" },
      settings: { trusted_repos: [world.base] },
    });
    await daemon.start();
    const sent = await runDispatchTool(settings, session, {
      task: "Add notes.txt",
      project: "acme-widget",
      project_dir: world.repo,
      mode: "plan",
    });
    const id = String(sent.details.dispatch_id);
    const stateFile = join(world.layout.dispatch.sessionDir(id), "state.json");
    await waitForFile(stateFile, (text) => text.includes('"status": "awaiting"'));

    const refused = await runAnswerTool(settings, { dispatch_id: id, answer: "reject" });
    expect(textOf(refused)).toMatch(/Nothing was changed: reject needs a reason/);
    expect(refused.details).toMatchObject({ rule: "unparseable" });
    const bad = await runAnswerTool(settings, { dispatch_id: id, answer: "yes" });
    expect(textOf(bad)).toMatch(/gstack_answer.*answer/);
    expect(await readFile(stateFile, "utf8")).toContain('"status": "awaiting"');

    const approved = await runAnswerTool(settings, { dispatch_id: id, answer: "approve", round: 1 });
    expect(textOf(approved)).toContain("approved plan 1");
    const completion = JSON.parse(
      await waitForFile(world.layout.dispatch.completedJson(id), (text) => text.length > 0),
    );
    expect(completion).toMatchObject({ status: "completed", commits: 1 });
    const again = await runAnswerTool(settings, { dispatch_id: id, answer: "approve" });
    expect(textOf(again)).toMatch(/Nothing was changed: dispatch .* has already ended \(completed\)/);
  });

  it("without a daemon on this host, sends nothing and says to answer on the daemon's machine", async () => {
    const result = await runAnswerTool(settings, { dispatch_id: "dispatch-a", answer: "approve", round: 2 });
    expect(result.details).toMatchObject({ ok: false, rule: "no_daemon_here" });
    expect(textOf(result)).toContain("gstack_answer reaches only a daemon on this host");
    expect(textOf(result)).toContain("gstack-dispatch answer dispatch-a approve --round 2");
    expect(textOf(result)).toContain("gstack-dispatch run");
    const revise = await runAnswerTool(settings, {
      dispatch_id: "dispatch-a",
      answer: "revise",
      text: "don't touch the tests",
    });
    expect(textOf(revise)).toContain(`gstack-dispatch answer dispatch-a revise 'don'\\''t touch the tests'`);
  });
});
