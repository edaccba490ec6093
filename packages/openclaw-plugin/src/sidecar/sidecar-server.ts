import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AgentRunResult } from "@gstack/agent-runner";
import { type ClaudeTurn, type ClaudeUsage, startClaudeTurn } from "./claude-turn";
import type { ContractorSettings } from "./contractor-settings";
import { ClaudePool, type KeptClaudeOptions, type KeptTurnOptions } from "./kept-claude";
import {
  chunkWriter,
  errorBody,
  type OpenAiError,
  openAiError,
  parseChatRequest,
  SSE_DONE,
  sseData,
  type TurnUsage,
} from "./openai-wire";
import {
  bootstrapPrompt,
  messageFingerprint,
  type OpenClawTurn,
  readOpenClawTurn,
  withoutSentMessages,
} from "./openclaw-turn";
import { type ClaudeSessionEntry, claudeSessionExists, type SessionMap } from "./session-map";
import { type OpenClawSessionState, openclawStartedOver } from "./session-reset";
import { authorizationMatches } from "./sidecar-key";
import { resumeWasRefused, turnError } from "./turn-error";
import type { TurnLocks } from "./turn-locks";

/** The response header every sidecar answer carries: the serving process's id. */
export const SIDECAR_HEADER = "x-gstack-contractor";

export interface SidecarLog {
  info(message: string): void;
  warn(message: string): void;
}

export interface SidecarServerOptions {
  settings: ContractorSettings & { projectDir: string };
  key: string;
  sessions: SessionMap;
  /** The per-session turn locks on disk, shared by every process serving these sessions. */
  locks: TurnLocks;
  /** Environment for Claude Code on top of the gateway's. */
  claudeEnv: Record<string, string | undefined>;
  allowedTools: readonly string[];
  disallowedTools: readonly string[];
  log: SidecarLog;
  /** Silence before the stream starts (or between keep-alive comments). Default 10 s. */
  keepAliveMs?: number;
  /**
   * OpenClaw's own record of a session (its session store), read on every turn to see whether
   * the session started over (/new, /reset). Absent outside a gateway.
   */
  openclawSession?: (session: { agentId?: string; sessionKey: string }) => OpenClawSessionState | undefined;
}

/** Sent to Claude Code when OpenClaw sends again only what Claude already has (a turn cut short). */
export const INTERRUPTED_PROMPT =
  "The previous turn was cut short before you answered. Answer the last message now.";

/** The request handler of the sidecar, with the turns it is running. */
export interface SidecarHandler {
  handle(request: IncomingMessage, response: ServerResponse): void;
  /** OpenClaw session keys with a turn running. */
  busySessions(): string[];
  /** Process ids of the Claude Code turns running now. */
  turnPids(): number[];
  /** Process ids of every Claude Code process this handler has: running a turn or kept between turns. */
  claudePids(): number[];
  /** Stops every running turn and kept process (each whole process group) and waits until they are gone. */
  stopAll(reason: string): Promise<void>;
  /**
   * New turns go elsewhere from now on (a settings reload): the processes kept between turns
   * are stopped now, each running turn's when the turn ends (before its session is freed).
   */
  retire(): Promise<void>;
  /** Settles once no turn is running (at once when none is). */
  idle(): Promise<void>;
}

const sendError = (response: ServerResponse, error: OpenAiError, close = false) => {
  if (response.headersSent) return;
  const body = JSON.stringify(errorBody(error));
  response.writeHead(error.status, {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
    ...(close ? { connection: "close" } : {}),
  });
  response.end(body);
};

/** Reads a body up to `limit` bytes; undefined (after answering 413) when it is larger. */
async function readBody(
  request: IncomingMessage,
  response: ServerResponse,
  limit: number,
): Promise<string | undefined> {
  const tooLarge = () => {
    sendError(
      response,
      openAiError(
        413,
        "invalid_request_error",
        "request_too_large",
        `The request body is over ${limit} bytes (contractor.maxBodyBytes).`,
      ),
      true,
    );
    response.once("finish", () => request.destroy());
  };
  const declared = Number(request.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    tooLarge();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      tooLarge();
      return undefined;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The OpenAI-compatible face of Claude Code: `GET /v1/models` and streamed
 * `POST /v1/chat/completions`, each OpenClaw session one Claude Code session.
 */
export function createSidecarHandler(options: SidecarServerOptions): SidecarHandler {
  const { settings, sessions, log } = options;
  const running = new Map<string, ClaudeTurn>();
  /** Sessions with a turn in progress, taken before anything is awaited so two requests cannot both pass. */
  const busy = new Set<string>();
  let idleWaiters: (() => void)[] = [];
  const notBusy = (sessionKey: string) => {
    busy.delete(sessionKey);
    if (busy.size > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const wake of waiters) wake();
  };
  const keepAliveMs = options.keepAliveMs ?? 10_000;
  const warn = (error: unknown) => log.warn(`contractor: ${String(error)}`);
  // Each session's Claude Code process is kept between turns, recorded beside the turn locks.
  const pool =
    settings.idleTimeoutMs > 0
      ? new ClaudePool(settings.idleTimeoutMs, {
          started: (sessionKey, pid) => options.locks.recordKept(sessionKey, pid).catch(warn),
          stopped: (sessionKey, pid) => options.locks.forgetKept(sessionKey, pid).catch(warn),
        })
      : undefined;
  const modelNames = new Set([settings.modelId, `${settings.providerId}/${settings.modelId}`]);

  const listModels = (response: ServerResponse) => {
    const body = JSON.stringify({
      object: "list",
      data: [{ id: settings.modelId, object: "model", created: 0, owned_by: "gstack" }],
    });
    response.writeHead(200, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
    });
    response.end(body);
  };

  /** OpenClaw's record of the turn's session; nothing when it cannot be read. */
  const openclawState = (turn: OpenClawTurn): OpenClawSessionState | undefined => {
    if (!options.openclawSession) return undefined;
    const agentId = turn.agentId ?? /^agent:([^:]+):/.exec(turn.sessionKey)?.[1];
    try {
      return options.openclawSession({ ...(agentId ? { agentId } : {}), sessionKey: turn.sessionKey });
    } catch (error) {
      log.warn(`contractor: could not read OpenClaw's session ${turn.sessionKey}: ${String(error)}`);
      return undefined;
    }
  };

  /**
   * Which Claude session a turn continues, or why it starts a new one (`note`, said to the person
   * and to Claude; `retire`, why the old session ends: it is kept in the map's ended sessions).
   */
  const chooseSession = async (
    turn: OpenClawTurn,
    state: OpenClawSessionState | undefined,
  ): Promise<{ resume?: ClaudeSessionEntry; note?: string; told?: string; retire?: string }> => {
    const entry = await sessions.get(turn.sessionKey);
    if (!entry) return {};
    const resumeHint = `claude --resume ${entry.claudeSessionId} in ${entry.cwd}`;
    const startedOver = openclawStartedOver(entry, state, turn.openclawSessionId);
    if (startedOver) {
      return {
        retire: startedOver,
        told: `New Claude Code session (${startedOver}); the earlier one stays on this machine: ${resumeHint}.`,
      };
    }
    if (entry.cwd !== settings.projectDir) {
      return {
        retire: `the project folder changed to ${settings.projectDir}`,
        note: `The project folder changed to ${settings.projectDir}, so this is a new Claude Code session.`,
      };
    }
    if (!(await claudeSessionExists(entry, { ...process.env, ...options.claudeEnv }))) {
      return {
        retire: "Claude Code no longer had the session",
        note: `The earlier Claude Code session (${entry.claudeSessionId}) is gone from this machine, so this is a new one; it does not remember the earlier turns.`,
      };
    }
    return { resume: entry };
  };

  const complete = async (request: IncomingMessage, response: ServerResponse) => {
    const raw = await readBody(request, response, settings.maxBodyBytes);
    if (raw === undefined) return;
    const read = parseChatRequest(raw);
    if (!read.ok) return sendError(response, read.error);
    const parsed = read.request;
    if (!modelNames.has(parsed.model)) {
      return sendError(
        response,
        openAiError(
          404,
          "invalid_request_error",
          "model_not_found",
          `The model ${parsed.model} is not served here; use ${settings.modelId}.`,
        ),
      );
    }
    if (parsed.stream !== true) {
      return sendError(
        response,
        openAiError(
          400,
          "invalid_request_error",
          "stream_required",
          'Field stream: this model only streams; send "stream": true.',
        ),
      );
    }
    const turn = readOpenClawTurn(parsed.messages, parsed.user);
    if (turn.text.length === 0) {
      return sendError(
        response,
        openAiError(
          400,
          "invalid_request_error",
          "no_user_message",
          "Field messages: there is no user message after the last assistant message.",
        ),
      );
    }
    const busyError = () =>
      openAiError(
        409,
        "invalid_request_error",
        "session_busy",
        `Claude Code is still working on the previous message of session ${turn.sessionKey}; send this one when it has answered.`,
      );
    if (busy.has(turn.sessionKey)) return sendError(response, busyError());
    busy.add(turn.sessionKey);
    let released = false;
    // Freed before the answer's last bytes go out, so the client's next message finds the session free.
    const release = async () => {
      if (released) return;
      released = true;
      await options.locks
        .release(turn.sessionKey)
        .catch((error: unknown) => log.warn(`contractor: ${String(error)}`));
      notBusy(turn.sessionKey);
    };
    try {
      // Another gateway process (or a sidecar replaced by a reload) may be running this session's turn.
      const lock = await options.locks.take(turn.sessionKey);
      if (!lock.taken) {
        notBusy(turn.sessionKey);
        released = true;
        return sendError(response, busyError());
      }
      await streamTurn(turn, response, release);
    } finally {
      await release();
    }
  };

  const streamTurn = async (turn: OpenClawTurn, response: ServerResponse, release: () => Promise<void>) => {
    const chunks = chunkWriter(`chatcmpl-${randomBytes(12).toString("hex")}`, settings.modelId);
    let opened = false;
    let tail = "";
    let finished = false;
    const open = () => {
      if (opened) return;
      opened = true;
      response.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      });
      response.write(sseData(chunks.role()));
    };
    const say = (text: string) => {
      if (text.length === 0 || response.destroyed) return;
      open();
      response.write(sseData(chunks.text(text)));
      tail = (tail + text).slice(-2);
    };
    const progress = (description: string) => {
      const lead = tail.length === 0 || tail.endsWith("\n\n") ? "" : tail.endsWith("\n") ? "\n" : "\n\n";
      say(`${lead}_${description.replace(/[_\n]/g, " ")}_\n\n`);
    };
    const keepAlive = setInterval(() => {
      if (!opened) open();
      else if (!response.destroyed) response.write(": working\n\n");
    }, keepAliveMs);

    let current: ClaudeTurn | undefined;
    const state = openclawState(turn);
    const run = async (
      resume: ClaudeSessionEntry | undefined,
      note: string | undefined,
      told: string | undefined,
    ) => {
      if (note ?? told) say(`_${note ?? told}_\n\n`);
      const now = new Date().toISOString();
      let recorded: ClaudeSessionEntry | undefined = resume;
      // A resumed session already holds what an aborted or crashed turn gave it: only the rest is sent.
      const sending = resume ? withoutSentMessages(turn, resume.lastSent ?? []) : turn;
      const lastSent = sending ? sending.parts.map(messageFingerprint) : (resume?.lastSent ?? []);
      const processOptions: KeptClaudeOptions = {
        binary: settings.claudeBinary,
        cwd: settings.projectDir,
        ...(resume ? { resumeSessionId: resume.claudeSessionId } : {}),
        sessionKey: turn.sessionKey,
        env: options.claudeEnv,
        allowedTools: options.allowedTools,
        disallowedTools: options.disallowedTools,
      };
      const turnOptions: KeptTurnOptions = {
        prompt: resume
          ? (sending?.text ?? INTERRUPTED_PROMPT)
          : bootstrapPrompt({ turn, projectDir: settings.projectDir, ...(note ? { note } : {}) }),
        timeoutMs: settings.turnTimeoutMs,
        onText: say,
        onToolUse: progress,
        onSessionId: (id) => {
          const record = (done: Promise<void>) =>
            done.catch((error: unknown) => log.warn(`contractor: ${String(error)}`));
          if (resume) {
            // Claude Code has read the message now: remember it, so it is not given the same words twice.
            void record(
              sessions.patch(turn.sessionKey, resume.claudeSessionId, (entry) => ({
                ...entry,
                lastSent,
                ...(entry.openclawLifecycle === undefined && state?.lifecycle
                  ? { openclawLifecycle: state.lifecycle }
                  : {}),
              })),
            );
            return;
          }
          if (recorded) return;
          // Recorded at once, so a turn cut short still leaves a session to resume.
          recorded = {
            claudeSessionId: id,
            cwd: settings.projectDir,
            ...(turn.openclawSessionId ? { openclawSessionId: turn.openclawSessionId } : {}),
            ...(state?.lifecycle ? { openclawLifecycle: state.lifecycle } : {}),
            createdAt: now,
            updatedAt: now,
            turns: 0,
            lastSent,
          };
          void record(sessions.set(turn.sessionKey, recorded));
        },
      };
      const claude = pool
        ? await pool.turn(processOptions, turnOptions)
        : startClaudeTurn({ ...processOptions, ...turnOptions });
      current = claude;
      running.set(turn.sessionKey, claude);
      if (claude.pid !== undefined) {
        await options.locks
          .recordClaude(turn.sessionKey, claude.pid)
          .catch((error: unknown) => log.warn(`contractor: ${String(error)}`));
      }
      // The client may have gone while the session was being looked up.
      if (response.destroyed) void claude.cancel("the client went away");
      const outcome = await claude.done;
      return { ...outcome, recorded };
    };

    const onClose = () => {
      if (!finished) void current?.cancel("the client went away");
    };
    response.once("close", onClose);
    try {
      const choice = await chooseSession(turn, state);
      if (choice.retire) {
        const previous = await sessions.get(turn.sessionKey);
        await sessions.retire(turn.sessionKey, choice.retire);
        if (previous)
          log.info(
            `contractor: ${turn.sessionKey} moves to a new Claude Code session (${choice.retire}); the earlier one is ${previous.claudeSessionId}`,
          );
      }
      let outcome = await run(choice.resume, choice.note, choice.told);
      if (choice.resume && !outcome.streamedText && resumeWasRefused(outcome.run) && !response.destroyed) {
        await sessions.retire(turn.sessionKey, "Claude Code refused to resume it");
        outcome = await run(
          undefined,
          `Claude Code no longer has session ${choice.resume.claudeSessionId}, so this is a new one; it does not remember the earlier turns.`,
          undefined,
        );
      }
      finished = true;
      // Only an answered turn counts: a cancelled, stopped or failed one does not.
      const answered = turnError(outcome.run) === undefined;
      if (outcome.recorded && answered) {
        await sessions.patch(turn.sessionKey, outcome.recorded.claudeSessionId, (entry) => ({
          ...entry,
          updatedAt: new Date().toISOString(),
          turns: entry.turns + 1,
        }));
      }
      const failure = response.destroyed ? undefined : turnError(outcome.run);
      await release();
      if (response.destroyed) return;
      if (failure) {
        log.warn(`contractor: turn of ${turn.sessionKey} failed: ${failure.message}`);
        if (!opened) return sendError(response, failure);
        response.write(sseData(errorBody(failure)));
        response.end(SSE_DONE);
        return;
      }
      open();
      response.write(sseData(chunks.finish("stop", usageOf(outcome.usage, outcome.run))));
      response.end(SSE_DONE);
    } finally {
      finished = true;
      clearInterval(keepAlive);
      response.off("close", onClose);
      if (running.get(turn.sessionKey) === current) running.delete(turn.sessionKey);
    }
  };

  return {
    handle(request, response) {
      // Names the process serving, so a second gateway that finds the port taken knows it is a sidecar.
      response.setHeader(SIDECAR_HEADER, String(process.pid));
      const path = (request.url ?? "/").split("?")[0];
      const work = async () => {
        if (path !== "/v1/models" && path !== "/v1/chat/completions") {
          return sendError(
            response,
            openAiError(
              404,
              "invalid_request_error",
              "not_found",
              `Nothing is served at ${path}; use /v1/chat/completions.`,
            ),
          );
        }
        if (!authorizationMatches(request.headers.authorization, options.key)) {
          return sendError(
            response,
            openAiError(
              401,
              "invalid_request_error",
              "invalid_api_key",
              "Missing or wrong key: send Authorization: Bearer <the key in contractor.keyFile>.",
            ),
          );
        }
        const wanted = path === "/v1/models" ? "GET" : "POST";
        if (request.method !== wanted) {
          return sendError(
            response,
            openAiError(405, "invalid_request_error", "method_not_allowed", `${path} takes ${wanted}.`),
          );
        }
        if (path === "/v1/models") return listModels(response);
        return complete(request, response);
      };
      work().catch((error: unknown) => {
        log.warn(`contractor: request failed: ${String(error)}`);
        if (!response.headersSent) {
          sendError(
            response,
            openAiError(500, "server_error", "internal_error", `The sidecar failed: ${String(error)}.`),
          );
        } else response.destroy();
      });
    },
    busySessions: () => [...busy],
    turnPids: () => [...running.values()].flatMap((turn) => (turn.pid === undefined ? [] : [turn.pid])),
    claudePids: () => [
      ...new Set([
        ...[...running.values()].flatMap((turn) => (turn.pid === undefined ? [] : [turn.pid])),
        ...(pool?.pids() ?? []),
      ]),
    ],
    async stopAll(reason) {
      await Promise.all([...running.values()].map((turn) => turn.cancel(reason)));
      await pool?.stopAll();
    },
    retire: async () => {
      await pool?.retire();
    },
    idle: () =>
      busy.size === 0
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            idleWaiters.push(resolve);
          }),
  };
}

function usageOf(usage: ClaudeUsage | undefined, run: AgentRunResult): TurnUsage {
  const prompt =
    (usage?.inputTokens ?? 0) + (usage?.cacheReadTokens ?? 0) + (usage?.cacheCreationTokens ?? 0);
  const completion = usage?.outputTokens ?? 0;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: usage?.cacheReadTokens ?? 0 },
    ...(run.result?.costUsd !== undefined ? { cost: run.result.costUsd } : {}),
  };
}
