import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { markedRunProcesses } from "@gstack/agent-runner";
import { freePort, type OpenClawGateway, type OpenClawHome, runOpenClaw } from "@gstack/openclaw-testbed";
import { type ScriptedModel, startScriptedModel } from "@gstack/scripted-model";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import {
  agentTurn,
  type GstackWorld,
  gatewayCall,
  installPlugin,
  makeGstackWorld,
  makeOpenClawHome,
  packPlugin,
  pluginPackageDir,
  sessionHistory,
  startOpenClawGateway,
  waitFor,
} from "../openclaw-world";
import { installContractor } from "./contractor-install";
import { readSidecarKey } from "./sidecar-key";
import {
  claudeForTests,
  claudeNewestText,
  contractorResponder,
  openclawBody,
  postChat,
  turnGates,
} from "./sidecar-test-support";
import { identityAlive, type TurnLockRecord } from "./turn-locks";

const SESSION = "agent:claude-code:chat";

let world: GstackWorld;
let claudeModel: ScriptedModel;
let home: OpenClawHome;
let gateway: OpenClawGateway;
let scratch: string;
let claudeHome: string;
let port: number;
let tarball: string;

const sessionsFile = () => join(home.stateDir, "gstack", "contractor-sessions.json");
interface MapFile {
  sessions: Record<string, { claudeSessionId: string; turns: number }>;
  ended?: { sessionKey: string; claudeSessionId: string; endedAt: string; reason: string; cwd: string }[];
}
const sessionMap = async () => JSON.parse(await readFile(sessionsFile(), "utf8")) as MapFile;
const claudeSessionOf = async (key: string) => (await sessionMap()).sessions[key]?.claudeSessionId;
const claudeRequestAbout = (mark: string) =>
  claudeModel.agentRequests().find((request) => claudeNewestText(request).includes(mark));

const keyFile = () => join(home.stateDir, "gstack", "contractor.key");

/** Every file under `folder`, at any depth. */
async function filesUnder(folder: string): Promise<string[]> {
  const entries = await readdir(folder, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

/** The session's messages as the gateway keeps them (`chat.history`, over the test's own connection). */
async function history(key: string): Promise<{ role: string; content: unknown }[]> {
  const answer = await sessionHistory(gateway, key);
  return (answer.messages ?? []) as { role: string; content: unknown }[];
}

beforeAll(async () => {
  await stat(join(pluginPackageDir, "dist", "index.js")).catch(() => {
    throw new Error("build @gstack/openclaw-plugin before its end-to-end tests (pnpm run build)");
  });
  scratch = await mkdtemp(join(tmpdir(), "gstack-contractor-e2e-"));
  claudeHome = join(scratch, "claude-home");
  tarball = await packPlugin(join(scratch, "pack"));
  world = await makeGstackWorld();
  claudeModel = await startScriptedModel({ respond: contractorResponder });
  home = await makeOpenClawHome({
    plugins: {
      entries: { gstack: { enabled: true, config: { gstackHome: world.root, followCompletions: false } } },
    },
  });
  await installPlugin(home, tarball);
  port = await freePort();
  // The install command, as a person runs it.
  const install = await runOpenClaw(
    [
      "gstack-contractor",
      "install",
      "--project",
      world.repo,
      "--port",
      String(port),
      "--claude",
      claudeForTests,
    ],
    { home: home.home, timeoutMs: 180_000 },
  );
  expect(install.code, `${install.stdout}\n${install.stderr}`).toBe(0);
  expect(install.stdout).toContain("installed: agent claude-code");
  const key = (await readSidecarKey(keyFile())) as string;
  const installed = JSON.parse(await readFile(home.configPath, "utf8"));
  expect(installed.models.providers["gstack-claude"].apiKey).toEqual({
    source: "file",
    provider: "gstack-contractor",
    id: "value",
  });
  expect(installed.secrets.providers["gstack-contractor"]).toEqual({
    source: "file",
    path: keyFile(),
    mode: "singleValue",
  });
  // What an older install left: the key in plain text. The next install replaces it with the ref.
  installed.models.providers["gstack-claude"].apiKey = key;
  delete installed.secrets;
  await writeFile(home.configPath, JSON.stringify(installed, null, 2));
  // Claude Code is pointed at the scripted model (the install step keeps everything else).
  await installContractor({
    configPath: home.configPath,
    pluginStateDir: join(home.stateDir, "gstack"),
    projectDir: world.repo,
    env: { ...claudeModel.claudeEnv(claudeHome), CLAUDE_CODE_MAX_RETRIES: "0" },
  });
  expect(await readFile(home.configPath, "utf8")).not.toContain(key);
  gateway = await startOpenClawGateway({ home: home.home, startTimeoutMs: loadBudget(300_000) });
}, loadBudget(900_000));

afterAll(async () => {
  await gateway?.stop();
  await claudeModel?.close();
  await home?.remove();
  await world?.remove();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("an OpenClaw agent whose model is Claude Code (the real gateway and the real CLI)", () => {
  it("carries turn 1 and turn 2 through one Claude Code session, and OpenClaw keeps both answers", async () => {
    const first = await agentTurn(gateway, SESSION, "Hello MARK-e1");
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain("ANSWER e1 from Claude Code.");
    const claudeSession = await claudeSessionOf(SESSION);
    expect(claudeSession).toMatch(/^[0-9a-f-]{36}$/);
    const bootstrap = claudeNewestText(claudeRequestAbout("MARK-e1")!);
    expect(bootstrap).toContain(`OpenClaw session: ${SESSION}`);
    expect(bootstrap).toContain(`Project folder: ${world.repo}`);

    const second = await agentTurn(gateway, SESSION, "And then MARK-e2");
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain("ANSWER e2 from Claude Code.");
    const request = claudeRequestAbout("MARK-e2")!;
    expect(claudeNewestText(request)).not.toContain("MARK-e1");
    expect(request.promptText).toContain("Hello MARK-e1");
    expect(request.promptText).toContain("ANSWER e1 from Claude Code.");
    expect(await claudeSessionOf(SESSION)).toBe(claudeSession);

    const said = (await history(SESSION))
      .filter((message) => message.role === "assistant")
      .map((message) => JSON.stringify(message.content));
    expect(said.some((text) => text.includes("ANSWER e1"))).toBe(true);
    expect(said.some((text) => text.includes("ANSWER e2"))).toBe(true);
  });

  it("reaches the sidecar through the SecretRef: the key is in neither openclaw.json nor the agents' generated files", async () => {
    const key = (await readSidecarKey(keyFile())) as string;
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect(await readFile(home.configPath, "utf8")).not.toContain(key);
    const files = await filesUnder(join(home.stateDir, "agents"));
    // The turns above made the agent's store (its generated model catalogue among it), so the check reads something.
    expect(
      files.some((file) => file.endsWith(join("claude-code", "agent", "openclaw-agent.sqlite"))),
      files.join("\n"),
    ).toBe(true);
    for (const file of files) {
      expect((await readFile(file)).includes(key), file).toBe(false);
    }
    // OpenClaw's own audit resolves the ref through the file provider and finds no plain-text key of ours.
    const audit = await runOpenClaw(["secrets", "audit", "--json"], { home: home.home, timeoutMs: 180_000 });
    const report = JSON.parse(audit.stdout) as {
      resolution: { refsChecked: number };
      findings: { code: string; jsonPath: string }[];
    };
    expect(report.resolution.refsChecked).toBeGreaterThanOrEqual(1);
    expect(
      report.findings.filter((finding) => /gstack-claude|gstack-contractor/.test(JSON.stringify(finding))),
    ).toEqual([]);
  });

  it("continues the same Claude Code session after a gateway restart", async () => {
    const before = await claudeSessionOf(SESSION);
    await gateway.stop();
    gateway = await startOpenClawGateway({ home: home.home, startTimeoutMs: loadBudget(300_000) });
    const third = await agentTurn(gateway, SESSION, "After the restart MARK-e3");
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout).toContain("ANSWER e3 from Claude Code.");
    const request = claudeRequestAbout("MARK-e3")!;
    expect(request.promptText).toContain("Hello MARK-e1");
    expect(request.promptText).toContain("And then MARK-e2");
    expect(await claudeSessionOf(SESSION)).toBe(before);
  });

  it("starts a fresh Claude Code session after a reset in OpenClaw, and keeps the earlier one findable", async () => {
    const before = (await claudeSessionOf(SESSION)) as string;
    expect(before).toMatch(/^[0-9a-f-]{36}$/);
    // The person resets the chat: OpenClaw's own chat client (the TUI's /new and /reset) sends
    // sessions.reset, the same reset the in-chat command makes. OpenClaw keeps the session's id.
    // Over the test's own connection to the gateway, as that client's connection sends it.
    const reset = await gatewayCall<{ ok?: boolean; key?: string }>(gateway, "sessions.reset", {
      key: SESSION,
      reason: "new",
    });
    expect(reset, JSON.stringify(reset)).toMatchObject({ ok: true });

    const asked = await agentTurn(gateway, SESSION, "What did I say before? MARK-e6");
    expect(asked.code, asked.stderr).toBe(0);
    expect(asked.stdout).toContain("ANSWER e6 from Claude Code.");
    // The reply says a new Claude Code session began and how to reach the earlier one.
    expect(asked.stdout).toContain(`claude --resume ${before}`);
    // What Claude Code sent its model for this turn holds nothing of the conversation before the reset.
    const request = claudeRequestAbout("MARK-e6")!;
    for (const earlier of ["MARK-e1", "ANSWER e1", "MARK-e2", "MARK-e3", "ANSWER e3"]) {
      expect(request.promptText).not.toContain(earlier);
    }
    const fresh = await claudeSessionOf(SESSION);
    expect(fresh).toMatch(/^[0-9a-f-]{36}$/);
    expect(fresh).not.toBe(before);
    expect((await sessionMap()).ended ?? []).toContainEqual(
      expect.objectContaining({
        sessionKey: SESSION,
        claudeSessionId: before,
        cwd: world.repo,
        turns: 3,
        reason: "the session was reset in OpenClaw",
      }),
    );
    // A later turn continues the new session rather than resetting again.
    const again = await agentTurn(gateway, SESSION, "And again MARK-e7");
    expect(again.stdout).toContain("ANSWER e7 from Claude Code.");
    expect(again.stdout).not.toContain("claude --resume");
    expect(await claudeSessionOf(SESSION)).toBe(fresh);
    expect(claudeRequestAbout("MARK-e7")?.promptText).toContain("What did I say before? MARK-e6");
  });

  it("after a kill -9 of the gateway mid-turn, the next gateway stops the Claude Code it left, so one runs per session", async () => {
    const key = "agent:claude-code:crash";
    // Each turn's Claude Code carries a run marker of its own: count turns, not their child processes.
    const runs = () =>
      new Set(
        markedRunProcesses({ OPENCLAW_SESSION: key }, ["GSTACK_AGENT_RUN"]).map(
          (found) => found.values.GSTACK_AGENT_RUN,
        ),
      );
    const pending = agentTurn(gateway, key, "Work on this HANGONCE-k1 MARK-k1").catch(() => undefined);
    await waitFor(() => claudeModel.hangingCount() > 0 && runs().size === 1, 120_000, "the turn to be held");
    const [leftover] = [...runs()];
    await gateway.kill();
    await pending;
    // What OpenClaw alone would leave: the turn's Claude Code still running, its lock on disk.
    expect(runs()).toEqual(new Set([leftover]));
    const lockFolder = join(home.stateDir, "gstack", "contractor-turns");
    // One turn lock; the processes kept between turns have records of their own (`.kept.json`).
    const turnLocks = async () =>
      (await readdir(lockFolder)).filter((name) => name.endsWith(".json") && !name.endsWith(".kept.json"));
    expect(await turnLocks()).toHaveLength(1);

    let most = 0;
    let seenAtMost = "";
    const sampler = setInterval(() => {
      const now = runs().size;
      if (now > most) {
        most = now;
        // What was running when the most were seen, for the failure message.
        seenAtMost = markedRunProcesses({ OPENCLAW_SESSION: key }, ["GSTACK_AGENT_RUN"])
          .map((found) => `${found.pid} ${found.values.GSTACK_AGENT_RUN}`)
          .join("\n");
      }
    }, 50);
    try {
      gateway = await startOpenClawGateway({ home: home.home, startTimeoutMs: loadBudget(300_000) });
      await waitFor(() => !runs().has(leftover as string), 60_000, "the leftover Claude Code to be stopped");
      // OpenClaw recovers the interrupted turn after its restart; until it has, it refuses a new one.
      const next = await waitFor(
        async () => {
          const attempt = await agentTurn(gateway, key, "And now MARK-k2");
          if (attempt.stdout.includes("ANSWER k2 from Claude Code.")) return attempt;
          if (/restart recovery|session_busy|still working/.test(`${attempt.stdout}\n${attempt.stderr}`))
            return undefined;
          throw new Error(`the turn after the restart failed:\n${attempt.stdout}\n${attempt.stderr}`);
        },
        240_000,
        "a turn after the restart",
      );
      expect(next.code, next.stderr).toBe(0);
    } finally {
      clearInterval(sampler);
    }
    expect(
      most,
      `${seenAtMost}\n${(await gateway.output())
        .split("\n")
        .filter((line) => line.includes("contractor"))
        .join("\n")}`,
    ).toBe(1);
    // Claude Code was given the held message once: no request of its conversation holds it twice
    // (resumed, the CLI resends its own transcript, where the held message is, once).
    const later = claudeModel.agentRequests().filter((request) => request.promptText.includes("MARK-k2"));
    expect(later.length).toBeGreaterThan(0);
    for (const request of later) {
      expect(request.promptText.split("HANGONCE-k1").length - 1, claudeNewestText(request)).toBe(1);
    }
    expect(await turnLocks()).toEqual([]);
    // What is kept now is the restarted gateway's own: each record names a live claude, one per session.
    const kept = await Promise.all(
      (await readdir(lockFolder))
        .filter((name) => name.endsWith(".kept.json"))
        .map(async (name) => JSON.parse(await readFile(join(lockFolder, name), "utf8")) as TurnLockRecord),
    );
    expect(kept.map((record) => record.sessionKey)).toContain(key);
    for (const record of kept) {
      expect(identityAlive(record.holder)).toBe(true);
      expect(identityAlive(record.claude as NonNullable<TurnLockRecord["claude"]>)).toBe(true);
    }
  });

  it("lets a turn running through an edit of the plugin's settings finish, and serves the next with the new settings", async () => {
    const key = "agent:claude-code:reload";
    let release: () => void = () => undefined;
    turnGates.set(
      "r1",
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    const pending = agentTurn(gateway, key, "A slow one HOLD-r1 MARK-r1");
    await waitFor(
      () => claudeModel.hangingCount() > 0 && markedRunProcesses({ OPENCLAW_SESSION: key }).length > 0,
      120_000,
      "the turn to be in progress",
    );
    const seen = (await gateway.output()).length;
    // The person edits the plugin's settings while Claude Code works: OpenClaw reloads the plugin.
    const config = JSON.parse(await readFile(home.configPath, "utf8"));
    config.plugins.entries.gstack.config.contractor.turnTimeoutMs = 1_200_000;
    await writeFile(home.configPath, JSON.stringify(config, null, 2));
    await waitFor(
      async () =>
        (await gateway.output()).slice(seen).includes("gstack contractor: serving with new settings"),
      120_000,
      "the plugin to be reloaded with the new settings",
    );
    expect(markedRunProcesses({ OPENCLAW_SESSION: key }).length).toBeGreaterThan(0);
    release();
    const done = await pending;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain("ANSWER r1 from Claude Code.");
    const next = await agentTurn(gateway, key, "After the edit MARK-r2");
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toContain("ANSWER r2 from Claude Code.");
    // The same Claude Code session goes on: the turn after the reload resumes the one that ran through it.
    expect(claudeRequestAbout("MARK-r2")?.promptText).toContain("ANSWER r1 from Claude Code.");
  });

  it("interrupts Claude Code's turn when the client goes away, and bad requests never take the gateway down", async () => {
    const key = await readSidecarKey(join(home.stateDir, "gstack", "contractor.key"));
    const url = `http://127.0.0.1:${port}/v1`;
    const hangKey = "agent:claude-code:abandoned";
    const client = new AbortController();
    const held = claudeModel.hangingCount();
    const pending = postChat(
      url,
      key,
      openclawBody({ sessionKey: hangKey, conversation: ["HANG now"] }),
      client.signal,
    ).catch(() => undefined);
    await vi.waitUntil(() => claudeModel.hangingCount() > held, {
      timeout: loadBudget(120_000),
      interval: 100,
    });
    const runs = () =>
      new Set(
        markedRunProcesses({ OPENCLAW_SESSION: hangKey }, ["GSTACK_AGENT_RUN"]).map(
          (found) => found.values.GSTACK_AGENT_RUN,
        ),
      );
    expect(runs().size).toBe(1);
    client.abort();
    await pending;
    // The turn is interrupted: Claude Code gives up its model request, and its process is kept for the session.
    await vi.waitUntil(() => claudeModel.hangingCount() === held, {
      timeout: loadBudget(30_000),
      interval: 100,
    });
    expect(runs().size).toBeLessThanOrEqual(1);

    expect(
      (await postChat(url, undefined, openclawBody({ sessionKey: "x", conversation: ["MARK-x"] }))).status,
    ).toBe(401);
    expect((await postChat(url, key, "{nope")).error?.code).toBe("invalid_json");
    expect(
      (await postChat(url, key, openclawBody({ sessionKey: "x", conversation: ["MARK-x"], model: "other" })))
        .status,
    ).toBe(404);
    expect(
      (await postChat(url, key, openclawBody({ sessionKey: "x", conversation: ["MARK-x"], stream: false })))
        .status,
    ).toBe(400);
    await fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "y".repeat(9 * 1024 * 1024),
    }).then(
      (response) => expect(response.status).toBe(413),
      () => undefined,
    );
    expect(gateway.running()).toBe(true);
    expect((await fetch(`${gateway.url}/health`)).status).toBeLessThan(500);
    const after = await agentTurn(gateway, SESSION, "Still there? MARK-e4");
    expect(after.stdout).toContain("ANSWER e4 from Claude Code.");
  });

  it("leaves the port to the gateway that serves it when a second gateway on this machine has the contractor too", async () => {
    const otherLog = join(scratch, "other-gateway.log");
    const otherHome = await makeOpenClawHome({
      logging: { file: otherLog },
      plugins: {
        entries: { gstack: { enabled: true, config: { gstackHome: world.root, followCompletions: false } } },
      },
    });
    let other: OpenClawGateway | undefined;
    try {
      await installPlugin(otherHome, tarball);
      await installContractor({
        configPath: otherHome.configPath,
        pluginStateDir: join(otherHome.stateDir, "gstack"),
        projectDir: world.repo,
        port,
        claudeBinary: claudeForTests,
      });
      other = await startOpenClawGateway({ home: otherHome.home, startTimeoutMs: loadBudget(300_000) });
      const otherGateway = other;
      const logged = () => readFile(otherLog, "utf8").catch(() => "");
      await vi.waitUntil(async () => (await logged()).includes(`port ${port} is served by gateway process`), {
        timeout: loadBudget(120_000),
        interval: 250,
      });
      expect(otherGateway.running()).toBe(true);
      expect(await logged()).not.toContain("gstack contractor: serving");
      await expect(stat(join(otherHome.stateDir, "gstack", "contractor-sidecar.lock"))).rejects.toThrow();
      const again = await agentTurn(gateway, SESSION, "With a neighbour MARK-e5");
      expect(again.stdout).toContain("ANSWER e5 from Claude Code.");
    } finally {
      await other?.stop();
      await otherHome.remove();
    }
  });

  it("reports the setup with doctor and takes it out again with uninstall, leaving the rest of openclaw.json", async () => {
    const doctor = await runOpenClaw(["gstack-contractor", "doctor"], {
      home: home.home,
      timeoutMs: 180_000,
    });
    expect(doctor.stdout, doctor.stderr).toContain("ok   sidecar answers on");
    expect(doctor.stdout).not.toContain("FAIL");
    expect(doctor.code).toBe(0);
    const uninstall = await runOpenClaw(["gstack-contractor", "uninstall"], {
      home: home.home,
      timeoutMs: 180_000,
    });
    expect(uninstall.code, uninstall.stderr).toBe(0);
    const config = JSON.parse(await readFile(home.configPath, "utf8")) as {
      models?: { providers?: Record<string, unknown> };
      agents?: { entries?: Record<string, unknown> };
      plugins: { entries: { gstack: { enabled: boolean; config: Record<string, unknown> } } };
    };
    expect(config.models?.providers?.["gstack-claude"]).toBeUndefined();
    expect((config as { secrets?: unknown }).secrets).toBeUndefined();
    expect(config.agents?.entries?.["claude-code"]).toBeUndefined();
    expect(config.plugins.entries.gstack.enabled).toBe(true);
    expect(config.plugins.entries.gstack.config).toEqual({
      gstackHome: world.root,
      followCompletions: false,
    });
  });
});
