import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer, request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processGroupAlive } from "@gstack/agent-runner";
import { gstackLayout } from "@gstack/contracts";
import { freePort } from "@gstack/openclaw-testbed";
import { type ScriptedModel, startScriptedModel } from "@gstack/scripted-model";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { loadBudget } from "../../../../vitest.load-budget";
import { resolveContractorSettings } from "./contractor-settings";
import { claudeProjectFolderName, SessionMap } from "./session-map";
import { type RunningSidecar, releaseSidecar, startSidecarOnce } from "./sidecar-service";
import {
  type ChatAnswer,
  claudeForTests,
  claudeNewestText,
  contractorResponder,
  openclawBody,
  postChat,
  turnGates,
} from "./sidecar-test-support";
import { TurnLocks } from "./turn-locks";

const KEY = "contractor-key-for-tests-0123456789";
let base: string;
let project: string;
let claudeHome: string;
let model: ScriptedModel;
let sidecar: RunningSidecar;
let sessions: SessionMap;
let port: number;
let gstackHome: string;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), "gstack-contractor-"));
  project = join(base, "project");
  claudeHome = join(base, "claude-home");
  await mkdir(project, { recursive: true });
  await mkdir(claudeHome, { recursive: true });
  execFileSync("git", ["init", "-q", project]);
  // gstack-dispatch as installed from this package, for handing work to the daemon.
  const bin = join(base, "bin");
  await mkdir(bin, { recursive: true });
  const dispatchCommand = join(import.meta.dirname, "..", "..", "dist", "bin", "gstack-dispatch.js");
  await writeFile(
    join(bin, "gstack-dispatch"),
    `#!/bin/sh\nexec "${process.execPath}" "${dispatchCommand}" "$@"\n`,
    {
      mode: 0o755,
    },
  );
  gstackHome = join(base, "gstack");
  await mkdir(gstackHome, { recursive: true });
  model = await startScriptedModel({ respond: contractorResponder });
  port = await freePort();
  const settings = resolveContractorSettings(
    { enabled: true, projectDir: project, port, claudeBinary: claudeForTests, turnTimeoutMs: 120_000 },
    join(base, "state"),
  );
  sessions = new SessionMap(settings.sessionsFile);
  const started = await startSidecarOnce(settings, {
    key: KEY,
    sessions,
    claudeEnv: {
      ...model.claudeEnv(claudeHome),
      CLAUDE_CODE_MAX_RETRIES: "0",
      GSTACK_HOME: gstackHome,
      PATH: `${bin}:${process.env.PATH ?? ""}`,
    },
    allowedTools: ["Bash(gstack-dispatch submit:*)"],
    disallowedTools: ["Bash(sudo:*)"],
    log: { info: () => undefined, warn: () => undefined },
  });
  if (started.kind !== "started") throw new Error(`sidecar not started: ${JSON.stringify(started)}`);
  sidecar = started.sidecar;
});

afterAll(async () => {
  if (sidecar) await releaseSidecar(sidecar.port);
  await model?.close();
  if (base) await rm(base, { recursive: true, force: true });
});

const url = () => sidecar.url;
const finishChunk = (answer: ChatAnswer) =>
  answer.chunks.find(
    (chunk) => (chunk.choices as { finish_reason?: string }[])?.[0]?.finish_reason === "stop",
  );

describe("the contractor sidecar in front of the real Claude Code CLI", () => {
  it("keeps one Claude Code session per OpenClaw session: turn 2 resumes turn 1", async () => {
    const key = "agent:claude-code:resume";
    const first = await postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: key, conversation: ["Hello MARK-one"] }),
    );
    expect(first.status, first.raw).toBe(200);
    expect(first.done).toBe(true);
    expect(first.text).toContain("ANSWER one from Claude Code.");
    expect((first.chunks[0]?.choices as { delta: { role?: string } }[] | undefined)?.[0]?.delta.role).toBe(
      "assistant",
    );
    const usage = finishChunk(first)?.usage as { completion_tokens: number; cost?: number };
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(typeof usage.cost).toBe("number");
    const entry = await sessions.get(key);
    expect(entry?.claudeSessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(entry?.turns).toBe(1);
    const firstPrompt = model
      .agentRequests()
      .find((request) => claudeNewestText(request).includes("MARK-one"));
    expect(claudeNewestText(firstPrompt!)).toContain(`OpenClaw session: ${key}`);
    expect(claudeNewestText(firstPrompt!)).not.toContain("Runtime:");
    expect(claudeNewestText(firstPrompt!)).not.toContain("personal assistant running inside OpenClaw");

    const second = await postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: key, conversation: ["Hello MARK-one", first.text, "And now MARK-two"] }),
    );
    expect(second.text).toContain("ANSWER two from Claude Code.");
    const request = model
      .agentRequests()
      .find((candidate) => claudeNewestText(candidate).includes("MARK-two"))!;
    // Only the newest message was sent; the history Claude Code resent is its own session's.
    expect(claudeNewestText(request)).not.toContain("MARK-one");
    expect(request.promptText).toContain("Hello MARK-one");
    expect(request.promptText).toContain("ANSWER one from Claude Code.");
    expect((await sessions.get(key))?.claudeSessionId).toBe(entry?.claudeSessionId);
    expect((await sessions.get(key))?.turns).toBe(2);
  });

  it("starts a fresh Claude Code session, and says so, when the old one is gone", async () => {
    const key = "agent:claude-code:gone";
    await postChat(url(), KEY, openclawBody({ sessionKey: key, conversation: ["Hi MARK-g1"] }));
    const before = (await sessions.get(key))!;
    await rm(
      join(
        claudeHome,
        ".claude",
        "projects",
        claudeProjectFolderName(project),
        `${before.claudeSessionId}.jsonl`,
      ),
    );
    const after = await postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: key, conversation: ["Hi MARK-g1", "x", "Again MARK-g2"] }),
    );
    expect(after.text).toContain("is gone from this machine, so this is a new one");
    expect(after.text).toContain("ANSWER g2");
    expect((await sessions.get(key))?.claudeSessionId).not.toBe(before.claudeSessionId);
  });

  it("shows tool activity as short progress text", async () => {
    const answer = await postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: "agent:claude-code:tool", conversation: ["Please TOOL:notes.txt MARK-t"] }),
    );
    expect(answer.text).toMatch(/_Write \S*notes\.txt_/);
    expect(answer.text).toContain("ANSWER after-tool");
    expect(await stat(join(project, "notes.txt")).then(() => true)).toBe(true);
  });

  it("hands a long task to the dispatch daemon, with the chat as the place its report comes back to", async () => {
    const key = "agent:claude-code:background";
    const answer = await postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: key, conversation: ["Please do BACKGROUND:refactor"] }),
    );
    expect(answer.text).toContain("_Bash: gstack-dispatch submit .gstack-dispatch.json_");
    expect(answer.text).toContain("Handed to the gstack daemon");
    const incoming = gstackLayout(gstackHome).dispatch.incoming;
    const files = (await readdir(incoming)).filter((name) => name.endsWith(".json"));
    expect(files).toEqual(["dispatch-refactor.json"]);
    const dispatch = JSON.parse(await readFile(join(incoming, files[0] as string), "utf8"));
    expect(dispatch.reply_to).toEqual({ runtime: "openclaw", session_key: key });
  });

  it("keeps two sessions at once apart", async () => {
    const [left, right] = await Promise.all([
      postChat(
        url(),
        KEY,
        openclawBody({ sessionKey: "agent:claude-code:left", conversation: ["Left MARK-left"] }),
      ),
      postChat(
        url(),
        KEY,
        openclawBody({ sessionKey: "agent:claude-code:right", conversation: ["Right MARK-right"] }),
      ),
    ]);
    expect(left.text).toContain("ANSWER left");
    expect(left.text).not.toContain("right");
    expect(right.text).toContain("ANSWER right");
    expect(right.text).not.toContain("left");
    const [a, b] = await Promise.all([
      sessions.get("agent:claude-code:left"),
      sessions.get("agent:claude-code:right"),
    ]);
    expect(a?.claudeSessionId).toBeDefined();
    expect(a?.claudeSessionId).not.toBe(b?.claudeSessionId);
  });

  it("refuses a second message while a turn runs, and ends the turn when the client goes away", async () => {
    const key = "agent:claude-code:hang";
    const client = new AbortController();
    const pending = postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: key, conversation: ["HANG please"] }),
      client.signal,
    ).catch((error: unknown) => error);
    await vi.waitUntil(() => model.hangingCount() > 0, { timeout: loadBudget(90_000), interval: 100 });
    const pids = sidecar.handler.turnPids();
    expect(pids).toHaveLength(1);
    const busy = await postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: key, conversation: ["HANG please", "…", "Hello?"] }),
    );
    expect(busy.status).toBe(409);
    expect(busy.error?.code).toBe("session_busy");
    client.abort();
    await pending;
    await vi.waitUntil(() => sidecar.handler.busySessions().length === 0, {
      timeout: loadBudget(30_000),
      interval: 50,
    });
    // Interrupted, not stopped: no turn runs, and the session's process is kept for its next turn.
    expect(sidecar.handler.turnPids()).toEqual([]);
    expect(sidecar.handler.claudePids()).toContain(pids[0]);
    expect(processGroupAlive(pids[0] as number)).toBe(true);
  });

  it("maps Claude's rate limit, overload, context and auth failures to OpenAI-shaped errors", async () => {
    const failed = async (marker: string) =>
      await postChat(
        url(),
        KEY,
        openclawBody({ sessionKey: `agent:claude-code:${marker}`, conversation: [marker] }),
      );
    const limited = await failed("FAIL-429");
    expect([limited.status, limited.error?.type, limited.error?.code]).toEqual([
      429,
      "rate_limit_error",
      "rate_limit_exceeded",
    ]);
    const overloaded = await failed("FAIL-529");
    expect([overloaded.status, overloaded.error?.code]).toEqual([503, "overloaded"]);
    const full = await failed("FAIL-CONTEXT");
    expect([full.status, full.error?.code]).toEqual([400, "context_length_exceeded"]);
    const denied = await failed("FAIL-401");
    expect([denied.status, denied.error?.code]).toEqual([401, "invalid_api_key"]);
    expect(denied.error?.message).toContain("Claude Code could not authenticate");
  });

  it("answers bad requests with OpenAI-shaped errors and keeps serving", async () => {
    const noKey = await postChat(
      url(),
      undefined,
      openclawBody({ sessionKey: "agent:x:bad", conversation: ["MARK-x"] }),
    );
    expect([noKey.status, noKey.error?.code]).toEqual([401, "invalid_api_key"]);
    const wrongKey = await postChat(
      url(),
      "not-the-key",
      openclawBody({ sessionKey: "agent:x:bad", conversation: ["MARK-x"] }),
    );
    expect(wrongKey.status).toBe(401);
    const malformed = await postChat(url(), KEY, "{not json");
    expect([malformed.status, malformed.error?.code]).toEqual([400, "invalid_json"]);
    const missing = await postChat(url(), KEY, { model: "claude-code", stream: true });
    expect(missing.error?.message).toContain("Field messages");
    const unknown = await postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: "agent:x:bad", conversation: ["MARK-x"], model: "gpt-9" }),
    );
    expect([unknown.status, unknown.error?.code]).toEqual([404, "model_not_found"]);
    const plain = await postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: "agent:x:bad", conversation: ["MARK-x"], stream: false }),
    );
    expect([plain.status, plain.error?.code]).toEqual([400, "stream_required"]);
    // A body declared larger than the limit is refused before it is read.
    const huge = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = httpRequest(`${url()}/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${KEY}`,
          "content-type": "application/json",
          "content-length": 9 * 1024 * 1024,
        },
      });
      request.on("response", (response) => {
        let body = "";
        response.on("data", (chunk: Buffer) => {
          body += chunk.toString();
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
      });
      request.on("error", reject);
      request.flushHeaders();
    });
    expect(huge.status).toBe(413);
    expect((JSON.parse(huge.body) as { error: { code: string } }).error.code).toBe("request_too_large");
    // One that grows past the limit while it is read is refused too.
    const growing = await new Promise<number>((resolve) => {
      const request = httpRequest(`${url()}/chat/completions`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${KEY}`,
          "content-type": "application/json",
          "transfer-encoding": "chunked",
        },
      });
      request.on("response", (response) => {
        response.resume();
        resolve(response.statusCode ?? 0);
      });
      request.on("error", () => resolve(-1));
      const piece = "z".repeat(1024 * 1024);
      const write = (left: number) => {
        if (left === 0 || request.destroyed) return request.end();
        if (request.write(piece)) setImmediate(() => write(left - 1));
        else request.once("drain", () => write(left - 1));
      };
      write(12);
    });
    expect([413, -1]).toContain(growing);
    const models = await fetch(`${url()}/models`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(((await models.json()) as { data: { id: string }[] }).data.map((entry) => entry.id)).toEqual([
      "claude-code",
    ]);
    const nowhere = await fetch(`${url()}/other`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(nowhere.status).toBe(404);
    const still = await postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: "agent:claude-code:after-bad", conversation: ["MARK-alive"] }),
    );
    expect(still.text).toContain("ANSWER alive");
  });

  it("is started once per process and leaves a port served by another gateway alone", async () => {
    const settings = resolveContractorSettings(
      { enabled: true, projectDir: project, port: sidecar.port },
      join(base, "state"),
    );
    const options = {
      key: KEY,
      sessions,
      claudeEnv: {},
      allowedTools: [],
      disallowedTools: [],
      log: { info: () => undefined, warn: () => undefined },
    };
    const again = await startSidecarOnce(settings, options);
    expect(again.kind).toBe("shared");
    await releaseSidecar(sidecar.port);
    expect((await fetch(`${url()}/models`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(
      200,
    );

    // Another process holds a port and its lock file names a live process: left alone.
    const otherPort = await freePort();
    const other = createServer((_request, response) => response.end("other"));
    await new Promise<void>((resolve) => other.listen(otherPort, "127.0.0.1", () => resolve()));
    try {
      const elsewhere = resolveContractorSettings(
        { enabled: true, projectDir: project, port: otherPort },
        join(base, "other-state"),
      );
      await mkdir(join(base, "other-state"), { recursive: true });
      const { writeFile } = await import("node:fs/promises");
      await writeFile(elsewhere.lockFile, JSON.stringify({ pid: process.pid, port: otherPort }));
      expect((await startSidecarOnce(elsewhere, options)).kind).toBe("elsewhere");
      // A sidecar of another OpenClaw home (whose lock file is elsewhere) is recognised by its answers.
      const neighbourPort = await freePort();
      const neighbour = createServer((_request, response) => {
        response.setHeader("x-gstack-contractor", "4242");
        response.writeHead(401).end("{}");
      });
      await new Promise<void>((resolve) => neighbour.listen(neighbourPort, "127.0.0.1", () => resolve()));
      try {
        const settingsThere = resolveContractorSettings(
          { enabled: true, projectDir: project, port: neighbourPort },
          join(base, "neighbour"),
        );
        expect(await startSidecarOnce(settingsThere, options)).toEqual({
          kind: "elsewhere",
          pid: 4242,
          port: neighbourPort,
        });
      } finally {
        neighbour.close();
      }
      await writeFile(elsewhere.lockFile, JSON.stringify({ pid: 999_999_999, port: otherPort }));
      const taken = await startSidecarOnce(elsewhere, options);
      expect(taken.kind).toBe("failed");
    } finally {
      other.close();
    }
    expect(await readdir(join(base, "state"))).toContain("contractor-sidecar.lock");
  });

  it("refuses a session whose turn another process of this OpenClaw home holds, with the same 409", async () => {
    const key = "agent:claude-code:elsewhere";
    const settings = resolveContractorSettings(
      { enabled: true, projectDir: project, port },
      join(base, "state"),
    );
    const otherSidecar = new TurnLocks(settings.turnLocksDir);
    expect(await otherSidecar.take(key)).toEqual({ taken: true });
    const refused = await postChat(url(), KEY, openclawBody({ sessionKey: key, conversation: ["MARK-o1"] }));
    expect(refused.status).toBe(409);
    expect(refused.error?.code).toBe("session_busy");
    await otherSidecar.release(key);
    const served = await postChat(url(), KEY, openclawBody({ sessionKey: key, conversation: ["MARK-o1"] }));
    expect(served.text).toContain("ANSWER o1 from Claude Code.");
  });

  it("lets a running turn finish when a reload stops the service, and serves later turns with the new settings", async () => {
    const key = "agent:claude-code:reload";
    let release: () => void = () => undefined;
    turnGates.set(
      "q1",
      new Promise<void>((resolve) => {
        release = resolve;
      }),
    );
    const pending = postChat(
      url(),
      KEY,
      openclawBody({ sessionKey: key, conversation: ["Slow HOLD-q1 MARK-q1"] }),
    );
    await vi.waitUntil(() => model.hangingCount() > 0 && sidecar.handler.busySessions().includes(key), {
      timeout: loadBudget(90_000),
      interval: 50,
    });
    const [pid] = sidecar.handler.turnPids();
    // OpenClaw stops the plugin's service for the reload (its only user)...
    await releaseSidecar(sidecar.port);
    expect(processGroupAlive(pid as number)).toBe(true);
    // ...and starts the reloaded plugin's service with the edited settings.
    const edited = resolveContractorSettings(
      { enabled: true, projectDir: project, port, claudeBinary: claudeForTests, turnTimeoutMs: 240_000 },
      join(base, "state"),
    );
    const reloaded = await startSidecarOnce(edited, {
      key: KEY,
      sessions,
      claudeEnv: { ...model.claudeEnv(claudeHome), CLAUDE_CODE_MAX_RETRIES: "0", GSTACK_HOME: gstackHome },
      allowedTools: [],
      disallowedTools: ["Bash(sudo:*)"],
      log: { info: () => undefined, warn: () => undefined },
    });
    expect(reloaded.kind).toBe("reloaded");
    expect(reloaded.kind === "reloaded" && reloaded.sidecar).toBe(sidecar);
    // The running turn belongs to the handler it began on; the new one takes the next turns.
    expect(sidecar.handler.busySessions()).toEqual([]);
    release();
    const answer = await pending;
    expect(answer.status).toBe(200);
    expect(answer.text).toContain("ANSWER q1 from Claude Code.");
    expect(answer.done).toBe(true);
    // The process kept under the old settings went with its turn, before the session was free again.
    expect(processGroupAlive(pid as number)).toBe(false);
    const next = await postChat(
      url(),
      KEY,
      openclawBody({
        sessionKey: key,
        conversation: ["Slow HOLD-q1 MARK-q1", "ANSWER q1 from Claude Code.", "MARK-q2"],
      }),
    );
    expect(next.text).toContain("ANSWER q2 from Claude Code.");
    expect(
      model.agentRequests().find((request) => claudeNewestText(request).includes("MARK-q2"))?.promptText,
    ).toContain("ANSWER q1 from Claude Code.");
  });
});
