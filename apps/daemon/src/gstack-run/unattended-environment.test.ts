import { execFileSync } from "node:child_process";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ScriptedModel, scripted, startScriptedModel } from "@gstack/scripted-model";
import { afterEach, describe, expect, it } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { Daemon } from "../daemon";
import { completionOf, makeWorld, type TestWorld, waitFor } from "../test-support";
import { unattendedEnvironment } from "./unattended-environment";

/** gstack 1.68.3.0's own session classifier, from the corpus of real gstack files. */
const CLASSIFIER = join(
  import.meta.dirname,
  "..",
  "..",
  "..",
  "..",
  "..",
  "shared",
  "corpus",
  "gstack-1.68.3.0",
  "bin",
  "gstack-session-kind",
);
const claude = join(import.meta.dirname, "..", "..", "node_modules", ".bin", "claude");

function classify(environment: Record<string, string | undefined>): string {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH };
  for (const [name, value] of Object.entries(environment)) if (value !== undefined) env[name] = value;
  return execFileSync("bash", [CLASSIFIER], { env, encoding: "utf8" }).trim();
}

describe("unattendedEnvironment", () => {
  const unattended = unattendedEnvironment({ dispatchId: "dispatch-a", stateRoot: "/state" });

  it("names the run unattended for later gstack and the state root both ways", () => {
    expect(unattended).toMatchObject({
      GSTACK_SESSION_KIND: "unattended",
      GSTACK_STATE_ROOT: "/state",
      GSTACK_HOME: "/state",
      GSTACK_DISPATCH_ID: "dispatch-a",
    });
    expect(unattended).toHaveProperty("GSTACK_HEADLESS", undefined);
    expect(unattended).toHaveProperty("GSTACK_EPHEMERAL", undefined);
  });

  it("uses the OpenClaw session that asked, when the dispatch names one", () => {
    const fromChat = unattendedEnvironment({
      dispatchId: "dispatch-a",
      stateRoot: "/state",
      openclawSession: "agent:main:main",
    });
    expect(fromChat.OPENCLAW_SESSION).toBe("agent:main:main");
    expect(unattended.OPENCLAW_SESSION).toBe("gstack-dispatch:dispatch-a");
  });

  it("turns gstack 1.68's verdict on a Claude Code print run from interactive to spawned", () => {
    expect(classify({ CLAUDE_CODE_ENTRYPOINT: "cli" })).toBe("interactive");
    expect(classify({ CLAUDE_CODE_ENTRYPOINT: "cli", ...unattended })).toBe("spawned");
  });

  it("outranks every marker a daemon could inherit from its own parent", () => {
    const inherited = {
      CLAUDE_CODE_ENTRYPOINT: "cli",
      CONDUCTOR_WORKSPACE_PATH: "/w",
      CONDUCTOR_PORT: "1",
      CI: "true",
      GITHUB_ACTIONS: "true",
      GSTACK_HEADLESS: "1",
    };
    expect(classify(inherited)).toBe("headless");
    expect(classify({ ...inherited, ...unattended })).toBe("spawned");
  });
});

describe("a dispatched real Claude Code agent", { timeout: loadBudget(90_000) }, () => {
  let world: TestWorld | undefined;
  let model: ScriptedModel | undefined;
  let daemon: Daemon | undefined;
  let home: string | undefined;

  afterEach(async () => {
    await daemon?.stop(0);
    await model?.close();
    if (home) await rm(home, { recursive: true, force: true });
    await world?.cleanup();
  });

  it("is not interactive to gstack's own classifier, run through its Bash tool", async () => {
    world = await makeWorld();
    home = await mkdtemp(join(tmpdir(), "gstack-claude-home-"));
    const probe = join(world.base, "probe.sh");
    await writeFile(
      probe,
      [
        "#!/usr/bin/env bash",
        `echo "entrypoint=\${CLAUDE_CODE_ENTRYPOINT:-} kind=$(bash ${JSON.stringify(CLASSIFIER)})"`,
        'echo "state_root=$GSTACK_STATE_ROOT home=$GSTACK_HOME session_kind=$GSTACK_SESSION_KIND"',
        "",
      ].join("\n"),
    );
    await chmod(probe, 0o755);
    model = await startScriptedModel({
      script: [scripted.bash(`bash ${probe}`), scripted.text("Checked the session kind.")],
    });
    daemon = new Daemon({
      openclawWorkspace: false,
      root: world.root,
      claudeBinary: claude,
      agentEnv: { ...model.claudeEnv(home), CLAUDE_CODE_MAX_RETRIES: "0" },
      settings: { trusted_repos: [world.base], allowed_tools: ["Bash(bash:*)"] },
    });
    await daemon.start();
    const { submitDispatch } = await import("@gstack/daemon-client");
    await submitDispatch(world.layout, {
      id: "dispatch-session-kind",
      dispatched_by: "wintermute",
      task: "Tell me which session kind gstack sees",
      project: "acme-widget",
      project_dir: world.repo,
    });
    const layout = world.layout;
    const completion = await waitFor(() => completionOf(layout, "dispatch-session-kind"), 60_000);
    expect(completion).toMatchObject({ status: "completed" });
    const toolOutput = model.agentRequests()[1]?.promptText ?? "";
    // Claude Code names its entry point (`cli`, or `sdk-cli` under --print): without a marker
    // gstack 1.68 would answer interactive either way.
    expect(toolOutput).toMatch(/entrypoint=\S+ kind=spawned/);
    expect(classify({ CLAUDE_CODE_ENTRYPOINT: /entrypoint=(\S+)/.exec(toolOutput)?.[1] })).toBe(
      "interactive",
    );
    expect(toolOutput).toContain(`state_root=${world.root} home=${world.root} session_kind=unattended`);
  });
});
