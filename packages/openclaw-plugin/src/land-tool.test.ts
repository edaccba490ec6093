import { execFileSync } from "node:child_process";
import { access, chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Daemon } from "../../../apps/daemon/src/index";
import { loadBudget, waitUntil } from "../../../vitest.load-budget";
import { runDispatchTool } from "./dispatch-tool";
import { runLandTool } from "./land-tool";
import { type GstackWorld, makeGstackWorld } from "./openclaw-world";
import { type PluginSettings, resolvePluginSettings } from "./plugin-settings";

let world: GstackWorld;
let settings: PluginSettings;
let openclawState: string;
let daemon: Daemon | undefined;
/** The stand-in for the codex CLI the daemon runs; a test may write another in its place. */
let codex: string;
const session = { sessionKey: "agent:main:main", agentId: "main" };
const textOf = (result: { content: { text: string }[] }) => result.content[0]?.text ?? "";
const git = (...args: string[]) =>
  execFileSync("git", ["-C", world.repo, ...args], { encoding: "utf8" }).trim();

beforeEach(async () => {
  world = await makeGstackWorld();
  openclawState = await mkdtemp(join(tmpdir(), "openclaw-state-"));
  settings = resolvePluginSettings({ gstackHome: world.root }, openclawState);
  // A stand-in for the codex CLI that commits one file with git add -A, as agents do.
  codex = join(world.base, "codex-stand-in");
  await writeFile(
    codex,
    "#!/bin/sh\necho 'from the agent' > feature.txt && git add -A && git commit -q -m 'Add feature.txt' && printf '## What shipped\\n- feature.txt\\n'\n",
  );
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

async function finishedDispatch(): Promise<string> {
  const result = await runDispatchTool(settings, session, {
    task: "Add feature.txt",
    project: "acme-widget",
    project_dir: world.repo,
    target_agent: "codex",
  });
  const id = String(result.details.dispatch_id);
  return waitUntil(
    () =>
      access(world.layout.dispatch.completedJson(id)).then(
        () => id,
        () => undefined,
      ),
    { idleMs: 30_000, what: `waiting for the completion of ${id}` },
  );
}

describe("the gstack_land tool", { timeout: loadBudget(60_000) }, () => {
  it("lands a finished dispatch's branch through the daemon, once, when asked", async () => {
    const id = await finishedDispatch();
    const completion = JSON.parse(await readFile(world.layout.dispatch.completedJson(id), "utf8"));
    expect(completion).toMatchObject({ branch: `gstack/${id}`, landing: "awaiting" });
    await expect(access(join(world.repo, "feature.txt"))).rejects.toThrow();
    const landed = await runLandTool(settings, { dispatch_id: id, action: "land" });
    expect(landed.details).toMatchObject({ ok: true, landing: "landed", how: "fast-forward", changed: true });
    expect(textOf(landed)).toContain(`landed gstack/${id} into main (fast-forward)`);
    expect(await readFile(join(world.repo, "feature.txt"), "utf8")).toBe("from the agent\n");
    const again = await runLandTool(settings, { dispatch_id: id, action: "land" });
    expect(again.details).toMatchObject({ ok: true, changed: false });
  });

  it("says nothing was changed, naming the files, when the checkout has uncommitted changes", async () => {
    const id = await finishedDispatch();
    await writeFile(join(world.repo, "README.md"), "# edited\n");
    const refused = await runLandTool(settings, { dispatch_id: id, action: "land" });
    // The files are named in the text; `details` keep only plain values.
    expect(refused.details).toMatchObject({ ok: false });
    expect(textOf(refused)).toMatch(
      /^Nothing was changed: main is checked out in .* with uncommitted changes \(README\.md\)/,
    );
    expect(git("rev-parse", "main")).not.toBe(git("rev-parse", `gstack/${id}`));
  });

  it("discards without the daemon running, and only with force when the work was never landed", async () => {
    const id = await finishedDispatch();
    await daemon?.stop(0);
    daemon = undefined;
    const refused = await runLandTool(settings, { dispatch_id: id, action: "discard" });
    expect(refused.details).toMatchObject({ ok: false, rule: "unlanded" });
    const discarded = await runLandTool(settings, { dispatch_id: id, action: "discard", force: true });
    expect(discarded.details).toMatchObject({ ok: true, landing: "discarded" });
    expect(git("branch", "--list", `gstack/${id}`)).toBe("");
  });

  it("says there is nothing to land, through the daemon and without it, for a branch with no commits", async () => {
    // This agent commits nothing.
    await writeFile(codex, "#!/bin/sh\nprintf '## What shipped\\n- nothing\\n'\n");
    const id = await finishedDispatch();
    const completion = JSON.parse(await readFile(world.layout.dispatch.completedJson(id), "utf8"));
    expect(completion).toMatchObject({ commits: 0, landing: "nothing" });
    const why = `nothing to land: the branch gstack/${id} has no commits beyond main; discard removes its worktree and branch`;
    const refused = await runLandTool(settings, { dispatch_id: id, action: "land" });
    expect(refused.details).toMatchObject({ ok: false });
    expect(textOf(refused)).toBe(`Nothing was changed: ${why}.`);
    await daemon?.stop(0);
    daemon = undefined;
    const offline = await runLandTool(settings, { dispatch_id: id, action: "land" });
    expect(offline.details).toMatchObject({ ok: false, rule: "nothing" });
    expect(textOf(offline)).toBe(`Nothing was changed: ${why}.`);
    const discarded = await runLandTool(settings, { dispatch_id: id, action: "discard" });
    expect(discarded.details).toMatchObject({ ok: true, landing: "discarded" });
  });

  it("refuses input that is not a land request", async () => {
    const bad = await runLandTool(settings, { dispatch_id: "dispatch-x", action: "merge" });
    expect(bad.details.ok).toBe(false);
  });
});
