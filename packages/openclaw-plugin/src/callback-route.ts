import type { IncomingMessage, ServerResponse } from "node:http";
import {
  AWAITING_CALLBACK_TYPE,
  CALLBACK_SIGNATURE_HEADER,
  CALLBACK_TIMESTAMP_HEADER,
  CALLBACK_TOLERANCE_SECONDS,
  checkValue,
  verifyCallback,
} from "@gstack/contracts";
import type { AwaitingInbox } from "./awaiting-follower";
import type { CompletionInbox } from "./completion-follower";
import { readSecretFile } from "./gstack-settings";
import type { PluginSettings } from "./plugin-settings";

/** Largest callback body accepted (the same bound as OpenClaw's own hooks). */
export const MAX_CALLBACK_BYTES = 256 * 1024;

/**
 * The handler of the signed completion route. It answers every request itself with a
 * JSON `{ok, error?}` body: 405 for a method other than POST, 413 for a body over 256 KiB,
 * 401 for a missing, malformed, stale or wrong signature, 409 for a request seen before,
 * 400 for a body that is neither a completion callback nor a waiting-notice callback (with
 * `field` and `rule`), 503 when no secret is configured, and 200 once the completion or notice
 * is in its session's outbox (or was already). A waiting notice (`type` `gstack.dispatch.awaiting`)
 * goes through `waiting`, the inbox the `dispatch/awaiting/` follower uses: 409 with `rule`
 * `finished` when the dispatch's completion was already taken, `stale_round` when a later round
 * was, 422 when it names no session.
 */
export function completionCallbackHandler(
  settings: PluginSettings,
  inbox: CompletionInbox,
  now: () => Date = () => new Date(),
  waiting?: Pick<AwaitingInbox, "deliver">,
) {
  // Signatures seen inside the timestamp window; older ones are refused as stale anyway.
  const seen = new Map<string, number>();
  return async (request: IncomingMessage, response: ServerResponse): Promise<boolean> => {
    const reply = (status: number, body: Record<string, unknown>) => {
      response.statusCode = status;
      response.setHeader("content-type", "application/json; charset=utf-8");
      response.end(`${JSON.stringify(body)}\n`);
      return true;
    };
    if (request.method !== "POST") return reply(405, { ok: false, error: "only POST is accepted" });
    const body = await readBody(request, MAX_CALLBACK_BYTES);
    if (body === undefined) {
      return reply(413, { ok: false, error: `the body is larger than ${MAX_CALLBACK_BYTES} bytes` });
    }
    let secret: string | undefined;
    try {
      secret = await readSecretFile(settings.callbackSecretFile);
    } catch (error) {
      return reply(503, { ok: false, error: error instanceof Error ? error.message : String(error) });
    }
    if (!secret) {
      return reply(503, { ok: false, error: `no callback secret in ${settings.callbackSecretFile}` });
    }
    const signature = header(request, CALLBACK_SIGNATURE_HEADER);
    const check = verifyCallback({
      body,
      timestamp: header(request, CALLBACK_TIMESTAMP_HEADER),
      signature,
      secret,
      now: now(),
    });
    if (!check.ok) return reply(401, { ok: false, error: check.message, reason: check.reason });
    const nowSeconds = Math.floor(now().getTime() / 1000);
    for (const [key, at] of seen) if (at < nowSeconds - 2 * CALLBACK_TOLERANCE_SECONDS) seen.delete(key);
    if (signature && seen.has(signature)) {
      return reply(409, { ok: false, error: "this exact request was received before (replay refused)" });
    }
    if (signature) seen.set(signature, nowSeconds);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString("utf8"));
    } catch {
      return reply(400, { ok: false, error: "the body is not JSON" });
    }
    const type =
      typeof parsed === "object" && parsed !== null ? (parsed as { type?: unknown }).type : undefined;
    if (type === AWAITING_CALLBACK_TYPE) {
      if (!waiting)
        return reply(400, { ok: false, error: "this route takes no waiting notices", field: "type" });
      return takeNotice(parsed, waiting, reply);
    }
    const callback = checkValue("completion-callback", parsed, { source: "completion callback" });
    if (!callback.ok) return refuseInvalid(reply, callback.error.issues[0]);
    const value = callback.value;
    try {
      const outcome = await inbox.deliver({
        completion: value.completion,
        ...(value.summary ? { summary: value.summary } : {}),
        ...(value.needs_judgment ? { needsJudgment: value.needs_judgment } : {}),
        ...(value.report_markdown ? { reportMarkdown: value.report_markdown } : {}),
        via: "callback",
      });
      if (outcome === "no-session") {
        return reply(422, {
          ok: false,
          error: `dispatch ${value.dispatch_id} names no OpenClaw session (no reply_to) and this plugin did not send it`,
        });
      }
      return reply(200, { ok: true, dispatch_id: value.dispatch_id, outcome });
    } catch (error) {
      return reply(503, {
        ok: false,
        error: error instanceof Error ? error.message.split("\n")[0] : String(error),
      });
    }
  };
}

type Reply = (status: number, body: Record<string, unknown>) => boolean;

/** A 400 naming the first failed field and its rule. */
function refuseInvalid(
  reply: Reply,
  issue: { path?: string; message?: string; rule?: string } | undefined,
): boolean {
  return reply(400, {
    ok: false,
    error: `${issue?.path || "body"}: ${issue?.message ?? "invalid"}`,
    field: issue?.path || "body",
    rule: issue?.rule ?? "invalid",
  });
}

/** A signed `awaiting-callback`: checked, then handed to the waiting-notice inbox. */
async function takeNotice(
  parsed: unknown,
  waiting: Pick<AwaitingInbox, "deliver">,
  reply: Reply,
): Promise<boolean> {
  const callback = checkValue("awaiting-callback", parsed, { source: "waiting notice callback" });
  if (!callback.ok) return refuseInvalid(reply, callback.error.issues[0]);
  const { notice, dispatch_id: id } = callback.value;
  if (notice.dispatch_id !== id) {
    return reply(400, {
      ok: false,
      error: `notice.dispatch_id: names ${notice.dispatch_id}, but the callback is for ${id}`,
      field: "notice.dispatch_id",
      rule: "same_dispatch",
    });
  }
  let outcome: Awaited<ReturnType<AwaitingInbox["deliver"]>>;
  try {
    outcome = await waiting.deliver(notice, "awaiting-callback");
  } catch (error) {
    return reply(503, {
      ok: false,
      error: error instanceof Error ? error.message.split("\n")[0] : String(error),
    });
  }
  if (outcome === "finished") {
    return reply(409, {
      ok: false,
      rule: "finished",
      error: `dispatch ${id} has ended and its report was taken; its waiting notice (round ${notice.round}) is not posted`,
    });
  }
  if (outcome === "stale-round") {
    return reply(409, {
      ok: false,
      rule: "stale_round",
      error: `dispatch ${id} already has a later round than ${notice.round}; round ${notice.round} is not posted`,
    });
  }
  if (outcome === "no-session") {
    return reply(422, {
      ok: false,
      rule: "no_session",
      error: `dispatch ${id} names no OpenClaw session (no reply_to) and this plugin did not send it`,
    });
  }
  return reply(200, { ok: true, dispatch_id: id, round: notice.round, outcome });
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The whole body, or undefined as soon as it passes `limit` bytes. */
async function readBody(request: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  const declared = Number(request.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limit) {
    request.resume();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) {
      request.resume();
      return undefined;
    }
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}
