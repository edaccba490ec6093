import { access, chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Daemon } from "../../../apps/daemon/src/index";
import { loadBudget, waitUntil } from "../../../vitest.load-budget";
import { runCancelTool } from "./cancel-tool";
import { runDispatchTool } from "./dispatch-tool";
import { type GstackWorld, makeGstackWorld } from "./openclaw-world";
import { type PluginSettings, resolvePluginSettings } from "./plugin-settings";

let world: GstackWorld;
let settings: PluginSettings;
let openclawState: string;
let daemon: Daemon | undefined;
const session = { sessionKey: "agent:main:main", agentId: "main" };
const textOf = (result: { content: { text: string }[] }) => result.content[0]?.text ?? "";

beforeEach(async () => {
  world = await makeGstackWorld();
  openclawState = await mkdtemp(join(tmpdir(), "openclaw-state-"));
  settings = resolvePluginSettings({ gstackHome: world.root }, openclawState);
  // A stand-in for the codex CLI that works until it is stopped.
  const codex = join(world.base, "codex-stand-in");
  await writeFile(codex, "#!/bin/sh\nexec sleep 600\n");
  await chmod(codex, 0o755);
  daemon = new Daemon({
    root: world.root,
    claudeBinary: "/nonexistent/claude",
    openclawWorkspace: false,
    settings: { max_concurrent: 1, agents: { codex: { command: [codex, "{prompt}"] } } },
  });
  await daemon.start();
});

afterEach(async () => {
  await daemon?.stop(0);
  daemon = undefined;
  await world.remove();
  await rm(openclawState, { recursive: true, force: true });
});

/** Until `check` gives a value, as long as the machine's load allows. */
function waitFor<T>(check: () => Promise<T | undefined>): Promise<T> {
  return waitUntil(check, { idleMs: 20_000, what: "waiting for the daemon" });
}

describe("the dispatch and cancel tools while the daemon runs", { timeout: loadBudget(60_000) }, () => {
  it("hand the dispatch to the daemon's service API, which takes it and says where it stands", async () => {
    const result = await runDispatchTool(settings, session, {
      task: "Add a file",
      project: "acme-widget",
      project_dir: world.repo,
      target_agent: "codex",
    });
    expect(result.details).toMatchObject({ ok: true, via: "service-api", position: 1, daemon_running: true });
    const id = String(result.details.dispatch_id);
    expect(textOf(result)).toContain(
      `Dispatched ${id} (acme-widget); the daemon took it, queued at position 1.`,
    );
    // Taken by the daemon at once: no file waits in dispatch/.
    const claimed = JSON.parse(await readFile(world.layout.dispatch.claimedFile(id), "utf8"));
    expect(claimed.reply_to).toEqual({
      runtime: "openclaw",
      session_key: "agent:main:main",
      agent_id: "main",
    });
    await expect(access(join(world.layout.dispatch.incoming, `${id}.json`))).rejects.toThrow();

    await waitFor(async () => (daemon?.snapshot().running.includes(id) ? true : undefined));
    const cancelled = await runCancelTool(settings, { dispatch_id: id, reason: "not needed" });
    expect(cancelled.details).toMatchObject({ ok: true, outcome: "cancelling" });
    await waitFor(async () =>
      access(world.layout.dispatch.completedJson(id)).then(
        () => true,
        () => undefined,
      ),
    );
    const again = await runCancelTool(settings, { dispatch_id: id });
    expect(again.details.ok).toBe(false);
    expect(textOf(again)).toBe(
      `${id} has already ended (cancelled); read its report with gstack_report instead.`,
    );
  });

  it("bring the daemon's refusal back at once, with its code and what to do", async () => {
    // Claude Code is not installed for this daemon, so a dispatch for it is refused.
    const refused = await runDispatchTool(settings, session, {
      task: "Add a file",
      project: "acme-widget",
      project_dir: world.repo,
    });
    expect(refused.details).toMatchObject({ ok: false, code: "unknown_agent", rule: "target-agent" });
    expect(textOf(refused)).toMatch(
      /^The dispatch was not sent: .*claude.* \(unknown_agent\)\. Choose an agent/,
    );
    const unknown = await runCancelTool(settings, { dispatch_id: "dispatch-never-sent" });
    expect(textOf(unknown)).toBe(
      "No dispatch dispatch-never-sent is queued or running; check the id with gstack_status.",
    );
  });
});
