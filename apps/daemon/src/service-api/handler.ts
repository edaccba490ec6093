import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  type AnswerAnswer,
  type AnswerRequest,
  ContractError,
  type DispatchSnapshot,
  type DocumentKind,
  dispatchIdSchema,
  type LandAnswer,
  type LandRequest,
  type ListSessionsResponse,
  parseJson,
  parseValue,
  SERVICE_API_ROUTES,
  type ServiceHealth,
} from "@gstack/contracts";
import { LandRefusal } from "@gstack/daemon-client";
import { AnswerRefusal } from "../await/answer";
import type { CancelOutcome } from "../dispatch/session-runner";
import type { OfferVerdict } from "../intake/intake-doors";
import { type ApiRefusal, apiError, refusalForRule } from "./errors";

/** What the API asks of the daemon: every answer comes from the daemon's own rooms. */
export interface ServiceBackend {
  health(): ServiceHealth;
  /** The same door and checks as a dropped file (`Daemon.offer`). */
  spawn(text: string, source: string): Promise<OfferVerdict>;
  /** When a caller refused as `queue_full` should try again, in seconds. */
  retryAfterSeconds(): number;
  snapshot(id: string, options: { report: boolean }): Promise<DispatchSnapshot | undefined>;
  cancel(id: string, reason: string): Promise<CancelOutcome>;
  list(): Promise<ListSessionsResponse>;
  /** Lands or discards a finished dispatch's branch; throws a LandRefusal saying why not. */
  land(request: LandRequest): Promise<LandAnswer>;
  /** A person's answer to a waiting dispatch; throws an AnswerRefusal saying what to send instead. */
  answer(request: AnswerRequest): Promise<AnswerAnswer>;
}

export interface HandlerOptions {
  /** When set, every request needs `Authorization: Bearer <token>` (the TCP listener). */
  token?: string;
  /** Bodies larger than this are refused with 413 before they are read whole. */
  maxBodyBytes: number;
  /** Names the listener in the audit log (`api:unix`, `api:tcp`). */
  source: string;
  log(line: string): void;
}

type Answer = { status: number; body: unknown; kind?: DocumentKind; headers?: Record<string, string> };

class RefusedError extends Error {
  constructor(readonly refusal: ApiRefusal) {
    super(refusal.body.message);
  }
}

const refuse = (refusal: ApiRefusal): never => {
  throw new RefusedError(refusal);
};

/**
 * The service API as one request handler: routes, the token check, body limits and
 * validation. Every answer is checked against its contracts schema before it is sent; a
 * request never reaches the daemon unless it is well formed, and nothing it sends can make the
 * handler throw past this function.
 */
export function serviceHandler(
  backend: ServiceBackend,
  options: HandlerOptions,
): (request: IncomingMessage, response: ServerResponse) => void {
  const expected = options.token ? digest(options.token) : undefined;
  return (request, response) => {
    void answer(request, backend, options, expected)
      .catch((error: unknown) => {
        if (error instanceof RefusedError) return refusalAnswer(error.refusal);
        if (ContractError.isInstance(error)) {
          // A request body that is not JSON, or not the document the action takes.
          const json = error.issues[0]?.rule === "json";
          return refusalAnswer(apiError(400, json ? "invalid_json" : "bad_request", error.message));
        }
        if (abortedByClient(request, error)) {
          // A client that went away mid-request is routine: one line, no stack.
          options.log(
            `service API: ${request.method} ${request.url}: the client went away before the request was read`,
          );
          return refusalAnswer(apiError(400, "bad_request", "the request was aborted"));
        }
        options.log(`service API: ${request.method} ${request.url}: ${(error as Error).stack ?? error}`);
        return refusalAnswer(apiError(500, "internal_error", "the daemon failed to answer; see its log"));
      })
      .then((result) => send(response, result, options));
  };
}

function abortedByClient(request: IncomingMessage, error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return (
    code === "ECONNRESET" ||
    code === "ECONNABORTED" ||
    code === "EPIPE" ||
    (error as Error | undefined)?.message === "aborted" ||
    (request.destroyed && !request.complete)
  );
}

function refusalAnswer(refusal: ApiRefusal): Answer {
  return {
    status: refusal.status,
    body: refusal.body,
    kind: "callback-error",
    ...(refusal.headers ? { headers: refusal.headers } : {}),
  };
}

function send(response: ServerResponse, result: Answer, options: HandlerOptions): void {
  let body = result.body;
  let status = result.status;
  if (result.kind) {
    try {
      body = parseValue(result.kind, body);
    } catch (error) {
      options.log(`service API: an answer failed its own schema: ${(error as Error).message}`);
      status = 500;
      body = { error: "internal_error", message: "the daemon's answer failed its schema; see its log" };
    }
  }
  const text = `${JSON.stringify(body)}\n`;
  if (response.headersSent || response.destroyed) return;
  response.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
    ...result.headers,
  });
  response.end(text);
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value).digest();
}

function checkToken(request: IncomingMessage, expected: Buffer): void {
  const header = request.headers.authorization ?? "";
  const match = /^Bearer (.+)$/i.exec(header);
  // Both sides are hashed first, so the comparison takes the same time whatever was sent.
  const given = digest(match?.[1]?.trim() ?? "");
  if (!match || !timingSafeEqual(given, expected)) {
    refuse(
      apiError(
        401,
        "unauthorized",
        match ? "the bearer token is wrong" : "a bearer token is required (Authorization: Bearer <token>)",
        {},
        { "www-authenticate": 'Bearer realm="gstack-dispatch"' },
      ),
    );
  }
}

async function answer(
  request: IncomingMessage,
  backend: ServiceBackend,
  options: HandlerOptions,
  expected: Buffer | undefined,
): Promise<Answer> {
  if (expected) checkToken(request, expected);
  const url = new URL(request.url ?? "/", "http://gstack-dispatch.invalid");
  const method = (request.method ?? "GET").toUpperCase();
  const routes = Object.entries(SERVICE_API_ROUTES).filter(([, route]) => route.path === url.pathname);
  if (routes.length === 0) {
    refuse(
      apiError(
        404,
        "unknown_action",
        `no action at ${url.pathname.slice(0, 200)}; see GET /health and the routes in COMPATIBILITY.md`,
      ),
    );
  }
  const route = routes.find(([, candidate]) => candidate.method === method);
  if (!route) {
    const allowed = routes.map(([, candidate]) => candidate.method).join(", ");
    refuse(
      apiError(
        405,
        "method_not_allowed",
        `${method} is not allowed on ${url.pathname}; use ${allowed}`,
        {},
        {
          allow: allowed,
        },
      ),
    );
  }
  const action = route?.[0] as keyof typeof SERVICE_API_ROUTES;
  switch (action) {
    case "health": {
      const health = backend.health();
      return { status: health.ok ? 200 : 503, body: health, kind: "service-health" };
    }
    case "list-sessions":
      return { status: 200, body: await backend.list(), kind: "list-sessions" };
    case "check-status":
    case "get-completion": {
      const id = dispatchIdParameter(url.searchParams.get("dispatch_id"));
      const snapshot = await backend.snapshot(id, { report: action === "get-completion" });
      if (!snapshot) refuse(notFound(id));
      return { status: 200, body: snapshot, kind: "dispatch-snapshot" };
    }
    case "spawn-session":
      return spawn(request, backend, options);
    case "cancel-session": {
      const body = parseJson("cancel-request", await readBody(request, options.maxBodyBytes), {
        source: "the cancel-session request body",
      });
      const outcome = await backend.cancel(body.dispatch_id, body.reason?.trim() || "cancel requested");
      if (outcome.outcome === "unknown") refuse(notFound(body.dispatch_id));
      return {
        status: 200,
        kind: "cancel-answer",
        body: {
          dispatch_id: body.dispatch_id,
          outcome: outcome.outcome,
          changed: outcome.outcome !== "finished",
          ...(outcome.status ? { status: outcome.status } : {}),
        },
      };
    }
    case "land-session": {
      const body = parseJson("land-request", await readBody(request, options.maxBodyBytes), {
        source: "the land-session request body",
      });
      try {
        return { status: 200, kind: "land-answer", body: await backend.land(body) };
      } catch (error) {
        if (!(error instanceof LandRefusal)) throw error;
        if (error.rule === "unknown") refuse(notFound(body.dispatch_id));
        return refuse(
          apiError(409, "land_refused", error.message, {
            rule: error.rule,
            dispatch_id: body.dispatch_id,
            ...(error.files.length > 0 ? { files: error.files } : {}),
          }),
        );
      }
    }
    case "answer-session": {
      const body = parseJson("answer-request", await readBody(request, options.maxBodyBytes), {
        source: "the answer-session request body",
      });
      try {
        return { status: 200, kind: "answer-answer", body: await backend.answer(body) };
      } catch (error) {
        if (!(error instanceof AnswerRefusal)) throw error;
        if (error.rule === "unknown")
          refuse(apiError(404, "not_found", error.message, { dispatch_id: body.dispatch_id }));
        return refuse(
          apiError(409, "answer_refused", error.message, { rule: error.rule, dispatch_id: body.dispatch_id }),
        );
      }
    }
  }
  return refuse(apiError(404, "unknown_action", `no action at ${url.pathname}`));
}

function notFound(id: string): ApiRefusal {
  return apiError(404, "not_found", `no dispatch ${id} is known to this daemon`, { dispatch_id: id });
}

function dispatchIdParameter(value: string | null): string {
  if (value === null || value === "") {
    return refuse(apiError(400, "bad_request", "the dispatch_id query parameter is required"));
  }
  const checked = dispatchIdSchema.safeParse(value);
  if (!checked.success) {
    return refuse(
      apiError(
        400,
        "bad_request",
        `dispatch_id ${JSON.stringify(value.slice(0, 200))} ${checked.error.issues[0]?.message ?? "is not a dispatch id"}`,
      ),
    );
  }
  return checked.data;
}

async function spawn(
  request: IncomingMessage,
  backend: ServiceBackend,
  options: HandlerOptions,
): Promise<Answer> {
  const body = parseJson("spawn-request", await readBody(request, options.maxBodyBytes), {
    source: "the spawn-session request body",
  });
  const text = typeof body.dispatch === "string" ? body.dispatch : JSON.stringify(body.dispatch);
  const verdict = await backend.spawn(text, options.source);
  if (!verdict.accepted) {
    if (verdict.rule === "queue_full") {
      const wait = backend.retryAfterSeconds();
      return refusalAnswer(
        apiError(
          429,
          "queue_full",
          `${verdict.reason}; try again in ${wait} s`,
          {
            retry_after_seconds: wait,
            rule: verdict.rule,
            ...(verdict.id ? { dispatch_id: verdict.id } : {}),
          },
          { "retry-after": String(wait) },
        ),
      );
    }
    return refusalAnswer(refusalForRule(verdict.rule, verdict.reason, verdict.id));
  }
  return {
    status: 202,
    kind: "spawn-answer",
    body: { accepted: true, dispatch_id: verdict.id, position: verdict.position, status: "queued" },
  };
}

/** Reads a request body up to `limit` bytes; a larger one is refused without reading it all. */
async function readBody(request: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(request.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    request.resume();
    return refuse(tooLarge(declared, limit));
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      request.resume();
      return refuse(tooLarge(size, limit));
    }
    chunks.push(chunk);
  }
  const bytes = Buffer.concat(chunks);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return refuse(apiError(400, "invalid_json", "the request body is not valid UTF-8"));
  }
}

function tooLarge(size: number, limit: number): ApiRefusal {
  return apiError(
    413,
    "too_large",
    `the request body is ${size} bytes or more, over the ${limit}-byte limit`,
    {},
    {
      connection: "close",
    },
  );
}
