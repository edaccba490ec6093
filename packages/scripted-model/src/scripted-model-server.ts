import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { encodeStreamEvent, messageBodyOf, type StreamEvent, streamEventsOf } from "./messages-stream";
import { firstUserTextOf, type MessagesRequestBody, promptTextOf, toolResultCountOf } from "./request-text";
import { responseBodyOf, responsesEventsOf } from "./responses-stream";
import { errorTypeForStatus, type ScriptedStep } from "./scripted-turn";

/** Which wire protocol a model request used. */
export type ModelApi = "anthropic-messages" | "openai-responses";

/** What kind of request the scripted model saw. */
export type RequestKind = "agent" | "side" | "count_tokens" | "probe" | "other";

/** One request as received, kept for assertions. */
export interface RecordedRequest {
  /** Position among all requests, from 0. */
  sequence: number;
  method: string;
  /** Path without the query string, e.g. `/v1/messages`. */
  path: string;
  query: string;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or undefined when there was none or it was not JSON. */
  body: MessagesRequestBody | undefined;
  /**
   * `agent`: a Messages call that offers tools (the agent loop; consumes the script).
   * `side`: a Messages call without tools (titles, summaries; answered with a short text).
   */
  kind: RequestKind;
  /** The protocol of a model request (agent or side). */
  api?: ModelApi;
  /** System prompt and all message text, joined. */
  promptText: string;
  /** The first user message: the task prompt. */
  firstUserText: string;
  /** Tool results already in the conversation. */
  toolResultCount: number;
  receivedAt: Date;
}

/** Decides the answer from the request; return undefined to fall back to the script list. */
export type ScriptedResponder = (
  request: RecordedRequest,
  agentRequestIndex: number,
) => ScriptedStep | undefined;

export interface ScriptedModelOptions {
  /** Answers for successive agent requests; each step serves `times` requests (default 1). */
  script?: ScriptedStep[];
  /** Chooses an answer from the request itself (e.g. whether learnings are in the prompt). */
  respond?: ScriptedResponder;
  /** Said when the script has run out. */
  finalText?: string;
  /** Answer text for side requests (no tools offered). */
  sideText?: string;
  /** Model name reported in answers. */
  model?: string;
  /** Defaults to 127.0.0.1. */
  host?: string;
  /** Defaults to 0 (an ephemeral port). */
  port?: number;
  /** Characters per streamed delta. */
  chunkSize?: number;
}

/** A running scripted model server. */
export interface ScriptedModel {
  /** Base URL for `ANTHROPIC_BASE_URL`, e.g. `http://127.0.0.1:41234`. */
  url: string;
  port: number;
  /** Every request so far, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** Only the agent-loop requests. */
  agentRequests(): RecordedRequest[];
  /** Requests currently held open by a `hang` step or a step's `holdUntil`. */
  hangingCount(): number;
  /** Environment for a Claude Code process pointed at this server (no real key, no telemetry). */
  claudeEnv(home: string): Record<string, string>;
  /**
   * A Codex CLI `config.toml` whose model provider is this server (Responses API, no retries).
   * Write it to `$CODEX_HOME/config.toml` and set `OPENAI_API_KEY` to anything.
   */
  codexConfigToml(): string;
  /**
   * Prepares `home/.codex/config.toml` for the Codex CLI and returns the environment that points
   * the CLI at this server (`HOME`, `CODEX_HOME`, a placeholder `OPENAI_API_KEY`).
   */
  codexEnv(home: string): Promise<Record<string, string>>;
  /** Stops listening and drops every open connection, hanging ones included. */
  close(): Promise<void>;
}

const maximumBodyBytes = 64 * 1024 * 1024;

/** Starts a local, scripted stand-in for the Anthropic Messages API on a loopback port. */
export async function startScriptedModel(options: ScriptedModelOptions = {}): Promise<ScriptedModel> {
  const requests: RecordedRequest[] = [];
  const hanging = new Set<ServerResponse>();
  const script = options.script ?? [];
  const model = options.model ?? "scripted-model";
  let stepIndex = 0;
  let servedOfStep = 0;
  let agentRequestIndex = 0;

  const nextScripted = (): ScriptedStep | undefined => {
    while (stepIndex < script.length) {
      const step = script[stepIndex]!;
      const times = step.times ?? 1;
      if (servedOfStep < times) {
        servedOfStep += 1;
        return step;
      }
      stepIndex += 1;
      servedOfStep = 0;
    }
    return undefined;
  };

  const server = createServer((request, response) => {
    readBody(request)
      .then((raw) => handle(request, response, raw))
      .catch((error: unknown) => {
        if (!response.headersSent) sendError(response, 400, "invalid_request_error", String(error));
        else response.destroy();
      });
  });

  const handle = async (request: IncomingMessage, response: ServerResponse, raw: Buffer) => {
    const [path = "/", query = ""] = (request.url ?? "/").split("?", 2);
    let body: MessagesRequestBody | undefined;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw.toString("utf8")) as MessagesRequestBody;
      } catch {
        body = undefined;
      }
    }
    const kind = kindOf(request.method ?? "GET", path, body);
    const api: ModelApi | undefined =
      kind === "agent" || kind === "side"
        ? path === "/v1/responses"
          ? "openai-responses"
          : "anthropic-messages"
        : undefined;
    const recorded: RecordedRequest = {
      sequence: requests.length,
      method: request.method ?? "GET",
      path,
      query,
      headers: { ...request.headers },
      body,
      kind,
      api,
      promptText: body ? promptTextOf(body) : "",
      firstUserText: body ? firstUserTextOf(body) : "",
      toolResultCount: body ? toolResultCountOf(body) : 0,
      receivedAt: new Date(),
    };
    requests.push(recorded);

    if (kind === "probe") {
      response
        .writeHead(200, { "content-type": "text/plain" })
        .end(request.method === "HEAD" ? undefined : "ok");
      return;
    }
    if (kind === "count_tokens") {
      sendJson(response, 200, { input_tokens: Math.max(1, Math.ceil(recorded.promptText.length / 4)) });
      return;
    }
    if (kind === "other") {
      if (request.method === "GET" && path === "/v1/models") {
        sendJson(response, 200, {
          data: [
            { type: "model", id: model, display_name: "Scripted model", created_at: "2026-01-01T00:00:00Z" },
          ],
          has_more: false,
          first_id: model,
          last_id: model,
        });
        return;
      }
      sendError(
        response,
        404,
        "not_found_error",
        `The scripted model does not serve ${request.method} ${path}`,
      );
      return;
    }

    let step: ScriptedStep | undefined;
    if (kind === "side") {
      step = { type: "text", text: options.sideText ?? "Scripted side answer." };
    } else {
      const index = agentRequestIndex;
      agentRequestIndex += 1;
      step = options.respond?.(recorded, index) ?? nextScripted();
      step ??= { type: "text", text: options.finalText ?? "Scripted model: the script is finished." };
    }
    await answer(response, step, body, recorded);
  };

  const answer = async (
    response: ServerResponse,
    step: ScriptedStep,
    body: MessagesRequestBody | undefined,
    recorded: RecordedRequest,
  ) => {
    if (step.type === "hang") {
      hanging.add(response);
      response.on("close", () => hanging.delete(response));
      return;
    }
    if (step.holdUntil) {
      hanging.add(response);
      await step.holdUntil.catch(() => undefined);
      hanging.delete(response);
      if (response.destroyed) return;
    }
    if (step.type === "error") {
      const headers: Record<string, string> = {};
      if (step.retryAfterSeconds !== undefined) headers["retry-after"] = String(step.retryAfterSeconds);
      const type = step.errorType ?? errorTypeForStatus(step.status);
      const message = step.message ?? `Scripted error ${step.status}`;
      if (recorded.api === "openai-responses") {
        sendJson(response, step.status, { error: { message, type, code: type, param: null } }, headers);
      } else {
        sendError(response, step.status, type, message, headers);
      }
      return;
    }
    const model_ = body?.model ?? model;
    const inputTokens = step.inputTokens ?? Math.max(1, Math.ceil(recorded.promptText.length / 4));
    if (recorded.api === "openai-responses") {
      const responseOptions = {
        responseId: `resp_scripted_${randomBytes(8).toString("hex")}`,
        itemId: `item_scripted_${randomBytes(8).toString("hex")}`,
        callId: `call_scripted_${randomBytes(8).toString("hex")}`,
        model: model_,
        inputTokens,
      };
      if (body?.stream !== true) {
        sendJson(response, 200, responseBodyOf(step, responseOptions));
        return;
      }
      await streamEvents(
        response,
        responsesEventsOf(step, responseOptions, options.chunkSize),
        step.chunkDelayMs,
      );
      return;
    }
    const answerOptions = {
      messageId: `msg_scripted_${randomBytes(8).toString("hex")}`,
      toolUseId: `toolu_scripted_${randomBytes(8).toString("hex")}`,
      model: model_,
      inputTokens,
    };
    if (body?.stream !== true) {
      sendJson(response, 200, messageBodyOf(step, answerOptions));
      return;
    }
    await streamEvents(response, streamEventsOf(step, answerOptions, options.chunkSize), step.chunkDelayMs);
  };

  const streamEvents = async (response: ServerResponse, events: StreamEvent[], chunkDelayMs?: number) => {
    response.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
      "request-id": `req_scripted_${randomBytes(6).toString("hex")}`,
    });
    for (const event of events) {
      if (response.destroyed) return;
      response.write(encodeStreamEvent(event));
      if (chunkDelayMs) await delay(chunkDelayMs);
    }
    response.end();
  };

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, options.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}`;
  const codexConfigToml = () =>
    [
      'model = "scripted-model"',
      'model_provider = "scripted"',
      "",
      "[model_providers.scripted]",
      'name = "Scripted model"',
      `base_url = "${url}/v1"`,
      'env_key = "OPENAI_API_KEY"',
      'wire_api = "responses"',
      "request_max_retries = 0",
      "stream_max_retries = 0",
      "",
    ].join("\n");

  return {
    url,
    port: address.port,
    requests,
    agentRequests: () => requests.filter((request) => request.kind === "agent"),
    hangingCount: () => hanging.size,
    claudeEnv: (home: string) => ({
      ANTHROPIC_BASE_URL: url,
      ANTHROPIC_API_KEY: "scripted-model-key",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      DISABLE_AUTOUPDATER: "1",
      HOME: home,
      XDG_CONFIG_HOME: `${home}/.config`,
    }),
    codexConfigToml,
    async codexEnv(home: string) {
      const codexHome = join(home, ".codex");
      await mkdir(codexHome, { recursive: true });
      await writeFile(join(codexHome, "config.toml"), codexConfigToml());
      return { HOME: home, CODEX_HOME: codexHome, OPENAI_API_KEY: "scripted-model-key" };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const response of hanging) response.destroy();
        hanging.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function kindOf(method: string, path: string, body: MessagesRequestBody | undefined): RequestKind {
  if ((method === "HEAD" || method === "GET") && path === "/") return "probe";
  if (method === "POST" && path === "/v1/messages/count_tokens") return "count_tokens";
  if (method === "POST" && (path === "/v1/messages" || path === "/v1/responses")) {
    return Array.isArray(body?.tools) && body.tools.length > 0 ? "agent" : "side";
  }
  return "other";
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    request.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size > maximumBodyBytes) {
        reject(new Error(`request body over ${maximumBodyBytes} bytes`));
        request.destroy();
        return;
      }
      chunks.push(chunk);
    });
    request.on("end", () => resolve(Buffer.concat(chunks)));
    request.on("error", reject);
  });
}

function sendJson(
  response: ServerResponse,
  status: number,
  value: unknown,
  headers: Record<string, string> = {},
) {
  const text = JSON.stringify(value);
  response
    .writeHead(status, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(text),
      "request-id": `req_scripted_${randomBytes(6).toString("hex")}`,
      ...headers,
    })
    .end(text);
}

function sendError(
  response: ServerResponse,
  status: number,
  type: string,
  message: string,
  headers: Record<string, string> = {},
) {
  sendJson(response, status, { type: "error", error: { type, message } }, headers);
}

function delay(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}
