import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { markedRunProcesses, processGroupAlive } from "@gstack/agent-runner";
import { freePort } from "@gstack/openclaw-testbed";
import { type ScriptedModel, startScriptedModel } from "@gstack/scripted-model";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { resolveContractorSettings } from "./contractor-settings";
import { SessionMap } from "./session-map";
import { type RunningSidecar, releaseSidecar, startSidecarOnce } from "./sidecar-service";
import {
  claudeForTests,
  claudeNewestText,
  contractorResponder,
  openclawBody,
  postChat,
  turnGates,
} from "./sidecar-test-support";
import { identityAlive, type TurnLockRecord } from "./turn-locks";

const KEY = "kept-claude-key-for-tests-0123456789";
let base: string;
let project: string;
let claudeHome: string;
let model: ScriptedModel;
const started: RunningSidecar[] = [];

const claudeEnv = () => ({ ...model.claudeEnv(claudeHome), CLAUDE_CODE_MAX_RETRIES: "0" });
const warnings: string[] = [];

async function sidecarWith(name: string, idleTimeoutMs: number) {
  const settings = resolveContractorSettings(
    {
      enabled: true,
      projectDir: project,
      port: await freePort(),
      claudeBinary: claudeForTests,
      turnTimeoutMs: 120_000,
      idleTimeoutMs,
    },
    join(base, name),
  );
  const sessions = new SessionMap(settings.sessionsFile);
  const start = await startSidecarOnce(settings, {
    key: KEY,
    sessions,
    claudeEnv: claudeEnv(),
    allowedTools: [],
    disallowedTools: [],
    log: { info: () => undefined, warn: (message) => warnings.push(message) },
  });
  if (start.kind !== "started") throw new Error(`sidecar not started: ${JSON.stringify(start)}`);
  started.push(start.sidecar);
  return { sidecar: start.sidecar, sessions, settings };
}

/** The kept-process records in a lock folder, as written. */
async function keptRecords(folder: string): Promise<{ record: TurnLockRecord; mode: number }[]> {
  const names = await readdir(folder).catch(() => [] as string[]);
  const records = await Promise.all(
    names
      .filter((name) => name.endsWith(".kept.json"))
      .map(async (name) => {
        // A record removed between the listing and the read (a process stopping now) is gone.
        try {
          const mode = (await stat(join(folder, name))).mode & 0o777;
          return { record: JSON.parse(await readFile(join(folder, name), "utf8")) as TurnLockRecord, mode };
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
          throw error;
        }
      }),
  );
  return records.filter((entry) => entry !== undefined);
}

const wait = (what: () => boolean | Promise<boolean>, ms = 60_000) =>
  vi.waitUntil(what, { timeout: loadBudget(ms), interval: 50 });

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-kept-claude-"));
  project = join(base, "project");
  claudeHome = join(base, "claude-home");
  await mkdir(project, { recursive: true });
  await mkdir(claudeHome, { recursive: true });
  execFileSync("git", ["init", "-q", project]);
  model = await startScriptedModel({ respond: contractorResponder });
});

afterAll(async () => {
  for (const sidecar of started) await releaseSidecar(sidecar.port);
  await model?.close();
  if (base) await rm(base, { recursive: true, force: true });
});

describe("a Claude Code process kept per session between turns (the real CLI)", () => {
  it("answers a second turn on the same process, in the same Claude Code session, recorded 0600 with its start time", async () => {
    const { sidecar, sessions, settings } = await sidecarWith("reuse", 600_000);
    const key = "agent:claude-code:kept";
    const first = await postChat(
      sidecar.url,
      KEY,
      openclawBody({ sessionKey: key, conversation: ["MARK-r1"] }),
    );
    expect(first.text).toContain("ANSWER r1 from Claude Code.");
    // Between turns the process is there, doing no turn, and recorded on disk.
    expect(sidecar.handler.turnPids()).toEqual([]);
    const [pid] = sidecar.handler.claudePids();
    expect(pid).toBeDefined();
    expect(processGroupAlive(pid as number)).toBe(true);
    const records = await keptRecords(settings.turnLocksDir);
    expect(records).toHaveLength(1);
    expect(records[0]?.mode).toBe(0o600);
    expect(records[0]?.record).toMatchObject({ sessionKey: key, holder: { pid: process.pid } });
    expect(records[0]?.record.claude?.pid).toBe(pid);
    expect(identityAlive(records[0]?.record.claude as NonNullable<TurnLockRecord["claude"]>)).toBe(true);

    const second = await postChat(
      sidecar.url,
      KEY,
      openclawBody({ sessionKey: key, conversation: ["MARK-r1", first.text, "Next MARK-r2"] }),
    );
    expect(second.text).toContain("ANSWER r2 from Claude Code.");
    expect(sidecar.handler.claudePids()).toEqual([pid]);
    // Each turn reports its own cost, not the process's running total (turn 2 is about as large as turn 1).
    const cost = (answer: typeof first) =>
      (answer.chunks.find((chunk) => chunk.usage)?.usage as { cost?: number } | undefined)?.cost ?? 0;
    expect(cost(first)).toBeGreaterThan(0);
    expect(cost(second)).toBeGreaterThan(0);
    expect(cost(second)).toBeLessThan(cost(first) * 1.5);
    const request = model
      .agentRequests()
      .find((candidate) => claudeNewestText(candidate).includes("MARK-r2"));
    expect(claudeNewestText(request!)).not.toContain("MARK-r1");
    expect(request?.promptText).toContain("ANSWER r1 from Claude Code.");
    expect((await sessions.get(key))?.turns).toBe(2);

    // Another session never shares it.
    const other = await postChat(
      sidecar.url,
      KEY,
      openclawBody({ sessionKey: "agent:claude-code:kept-other", conversation: ["MARK-r3"] }),
    );
    expect(other.text).toContain("ANSWER r3 from Claude Code.");
    const pids = sidecar.handler.claudePids();
    expect(pids).toHaveLength(2);
    expect(new Set(pids).size).toBe(2);
    expect((await sessions.get("agent:claude-code:kept-other"))?.claudeSessionId).not.toBe(
      (await sessions.get(key))?.claudeSessionId,
    );

    // Stopping the sidecar stops every kept process and removes its record.
    await releaseSidecar(sidecar.port);
    started.splice(started.indexOf(sidecar), 1);
    for (const gone of pids) expect(processGroupAlive(gone)).toBe(false);
    expect(markedRunProcesses({ OPENCLAW_SESSION: key })).toEqual([]);
    expect(await keptRecords(settings.turnLocksDir)).toEqual([]);
  });

  it("stops the process after the idle timeout; the next turn starts one that resumes the session", async () => {
    const { sidecar, sessions, settings } = await sidecarWith("idle", 300);
    const key = "agent:claude-code:idle";
    const first = await postChat(
      sidecar.url,
      KEY,
      openclawBody({ sessionKey: key, conversation: ["MARK-i1"] }),
    );
    expect(first.text).toContain("ANSWER i1 from Claude Code.");
    const session = (await sessions.get(key))?.claudeSessionId;
    const [pid] = sidecar.handler.claudePids();
    expect(pid).toBeDefined();
    await wait(() => sidecar.handler.claudePids().length === 0);
    await wait(() => !processGroupAlive(pid as number));
    await wait(() => markedRunProcesses({ OPENCLAW_SESSION: key }).length === 0);
    await wait(async () => (await keptRecords(settings.turnLocksDir)).length === 0);

    const second = await postChat(
      sidecar.url,
      KEY,
      openclawBody({ sessionKey: key, conversation: ["MARK-i1", first.text, "MARK-i2"] }),
    );
    expect(second.text).toContain("ANSWER i2 from Claude Code.");
    expect((await sessions.get(key))?.claudeSessionId).toBe(session);
    const request = model
      .agentRequests()
      .find((candidate) => claudeNewestText(candidate).includes("MARK-i2"));
    expect(request?.promptText).toContain("ANSWER i1 from Claude Code.");
  });

  it("interrupts a turn whose client went away, keeps the process, and answers the next turn on it", async () => {
    const { sidecar, sessions } = await sidecarWith("abort", 600_000);
    const key = "agent:claude-code:abort";
    const client = new AbortController();
    const pending = postChat(
      sidecar.url,
      KEY,
      openclawBody({ sessionKey: key, conversation: ["Wait HANGONCE-a1 MARK-a1"] }),
      client.signal,
    ).catch((error: unknown) => error);
    const hanging = model.hangingCount();
    await wait(() => model.hangingCount() > hanging && sidecar.handler.turnPids().length === 1, 90_000);
    const [pid] = sidecar.handler.turnPids();
    const busy = await postChat(
      sidecar.url,
      KEY,
      openclawBody({ sessionKey: key, conversation: ["Wait HANGONCE-a1 MARK-a1", "…", "Hello?"] }),
    );
    expect([busy.status, busy.error?.code]).toEqual([409, "session_busy"]);
    client.abort();
    await pending;
    await wait(() => sidecar.handler.busySessions().length === 0);
    // The model's request was given up by Claude Code itself (the interrupt), not by a stopped process.
    await wait(() => model.hangingCount() === hanging);
    expect(processGroupAlive(pid as number)).toBe(true);
    expect(sidecar.handler.claudePids()).toEqual([pid]);
    expect((await sessions.get(key))?.turns).toBe(0);

    // OpenClaw sends the unanswered message again with the next one; Claude Code already has it.
    const body = openclawBody({ sessionKey: key, conversation: ["Wait HANGONCE-a1 MARK-a1"] });
    const messages = body.messages as { role: string; content: unknown }[];
    messages.splice(2, 0, { role: "user", content: "[Wed 2026-11-25 15:44 UTC] Then MARK-a2" });
    const next = await postChat(sidecar.url, KEY, body);
    expect(next.status, next.raw).toBe(200);
    expect(next.text).toContain("ANSWER a2 from Claude Code.");
    expect(sidecar.handler.claudePids()).toEqual([pid]);
    const request = model
      .agentRequests()
      .find((candidate) => claudeNewestText(candidate).includes("MARK-a2"));
    expect(request?.promptText.split("HANGONCE-a1").length).toBe(2);
    expect((await sessions.get(key))?.turns).toBe(1);
  });

  it("with idleTimeoutMs 0, starts a process per turn and stops its whole group when the client goes away", async () => {
    const { sidecar, settings } = await sidecarWith("per-turn", 0);
    const key = "agent:claude-code:per-turn";
    const first = await postChat(
      sidecar.url,
      KEY,
      openclawBody({ sessionKey: key, conversation: ["MARK-p1"] }),
    );
    expect(first.text).toContain("ANSWER p1 from Claude Code.");
    expect(sidecar.handler.claudePids()).toEqual([]);
    expect(markedRunProcesses({ OPENCLAW_SESSION: key })).toEqual([]);
    expect(await keptRecords(settings.turnLocksDir)).toEqual([]);
    const client = new AbortController();
    const pending = postChat(
      sidecar.url,
      KEY,
      openclawBody({ sessionKey: key, conversation: ["MARK-p1", first.text, "HANG please"] }),
      client.signal,
    ).catch((error: unknown) => error);
    await wait(() => sidecar.handler.turnPids().length === 1 && model.hangingCount() > 0, 90_000);
    const [pid] = sidecar.handler.turnPids();
    client.abort();
    await pending;
    await wait(() => sidecar.handler.busySessions().length === 0);
    expect(processGroupAlive(pid as number)).toBe(false);
  });

  it("after a kill -9 of the sidecar's host, the next start stops the Claude Code processes it kept or ran", async () => {
    const stateDir = join(base, "crash");
    const port = await freePort();
    // Node itself is the host (tsx only as its loader), so the SIGKILL reaches the process that serves.
    const host: ChildProcess = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        join(import.meta.dirname, "kept-claude-host.ts"),
        JSON.stringify({
          port,
          stateDir,
          projectDir: project,
          claudeBinary: claudeForTests,
          key: KEY,
          claudeEnv: claudeEnv(),
          idleTimeoutMs: 600_000,
        }),
      ],
      { cwd: join(import.meta.dirname, "..", ".."), stdio: ["ignore", "pipe", "pipe"] },
    );
    let said = "";
    host.stdout?.on("data", (chunk: Buffer) => {
      said += chunk.toString();
    });
    host.stderr?.on("data", (chunk: Buffer) => {
      said += chunk.toString();
    });
    host.once("error", (error) => {
      said += `could not start the host: ${error.message}`;
    });
    const hostGone = new Promise<void>((resolve) => host.once("exit", () => resolve()));
    let release: () => void = () => undefined;
    turnGates.set(
      "c2",
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    try {
      await wait(
        () => said.includes("ready ") || host.exitCode !== null || said.includes("could not"),
        120_000,
      );
      expect(said).toContain("ready ");
      const url = `http://127.0.0.1:${port}/v1`;
      const idleKey = "agent:claude-code:crash-idle";
      const busyKey = "agent:claude-code:crash-busy";
      const answered = await postChat(
        url,
        KEY,
        openclawBody({ sessionKey: idleKey, conversation: ["MARK-c1"] }),
      );
      expect(answered.text, said).toContain("ANSWER c1 from Claude Code.");
      const held = postChat(
        url,
        KEY,
        openclawBody({ sessionKey: busyKey, conversation: ["Slow HOLD-c2 MARK-c2"] }),
      ).catch((error: unknown) => error);
      const hanging = model.hangingCount();
      await wait(
        () => model.hangingCount() > hanging && markedRunProcesses({ OPENCLAW_SESSION: busyKey }).length > 0,
        90_000,
      );
      const folder = join(stateDir, "contractor-turns");
      const kept = (await keptRecords(folder)).map((entry) => entry.record);
      expect(kept.map((record) => record.sessionKey).sort()).toEqual([busyKey, idleKey]);
      host.kill("SIGKILL");
      await hostGone;
      await held;
      // The model may answer now: nobody reads the dead host's turn any more.
      release();
      // What the dead host alone leaves: the turn's Claude Code still working, and the records.
      const busyClaude = kept.find((record) => record.sessionKey === busyKey)?.claude;
      expect(identityAlive(busyClaude as NonNullable<TurnLockRecord["claude"]>)).toBe(true);
      expect((await readdir(folder)).filter((name) => name.endsWith(".json")).length).toBeGreaterThanOrEqual(
        2,
      );

      const settings = resolveContractorSettings(
        { enabled: true, projectDir: project, port, claudeBinary: claudeForTests, turnTimeoutMs: 120_000 },
        stateDir,
      );
      const restart = await startSidecarOnce(settings, {
        key: KEY,
        sessions: new SessionMap(settings.sessionsFile),
        claudeEnv: claudeEnv(),
        allowedTools: [],
        disallowedTools: [],
        log: { info: () => undefined, warn: (message) => warnings.push(message) },
      });
      expect(restart.kind).toBe("started");
      if (restart.kind === "started") started.push(restart.sidecar);
      // Before the restarted sidecar serves, nothing of the dead host's is left.
      for (const record of kept) {
        expect(identityAlive(record.claude as NonNullable<TurnLockRecord["claude"]>)).toBe(false);
        expect(processGroupAlive(record.claude?.pid as number)).toBe(false);
      }
      expect(markedRunProcesses({ OPENCLAW_SESSION: busyKey })).toEqual([]);
      expect(markedRunProcesses({ OPENCLAW_SESSION: idleKey })).toEqual([]);
      expect((await readdir(folder)).filter((name) => name.endsWith(".json"))).toEqual([]);
      expect(warnings.join("\n")).toContain(
        `stopped the turn of ${busyKey} left by gateway process ${host.pid}`,
      );
      // OpenClaw sends the unanswered message again with the new one.
      const body = openclawBody({ sessionKey: busyKey, conversation: ["Slow HOLD-c2 MARK-c2"] });
      (body.messages as unknown[]).splice(2, 0, {
        role: "user",
        content: "[Wed 2026-11-25 15:44 UTC] Now MARK-c3",
      });
      const next = await postChat(url, KEY, body);
      expect(next.text, next.raw).toContain("ANSWER c3 from Claude Code.");
      // One kept process (one run marker, whatever processes the CLI itself is made of) for the session.
      const runs = new Set(
        markedRunProcesses({ OPENCLAW_SESSION: busyKey }, ["GSTACK_AGENT_RUN"]).map(
          (found) => found.values.GSTACK_AGENT_RUN,
        ),
      );
      expect(runs.size).toBe(1);
    } finally {
      release();
      if (host.exitCode === null && host.signalCode === null) host.kill("SIGKILL");
    }
  });
});
