import type { IncomingMessage, ServerResponse } from "node:http";
import {
  CALLBACK_SIGNATURE_HEADER,
  CALLBACK_TIMESTAMP_HEADER,
  CALLBACK_TOLERANCE_SECONDS,
  checkValue,
  verifyCallback,
} from "@gstack/contracts";
import type { CompletionInbox } from "./completion-follower";
import { readSecretFile } from "./gstack-settings";
import type { PluginSettings } from "./plugin-settings";

/** Largest callback body accepted (the same bound as OpenClaw's own hooks). */
export const MAX_CALLBACK_BYTES = 256 * 1024;

/**
 * The handler of the signed completion route. It answers every request itself with a
 * JSON `{ok, error?}` body: 405 for a method other than POST, 413 for a body over 256 KiB,
 * 401 for a missing, malformed, stale or wrong signature, 409 for a request seen before,
 * 400 for a body that is not a completion callback, 503 when no secret is configured, and
 * 200 once the completion is in its session (or was already).
 */
export function completionCallbackHandler(
  settings: PluginSettings,
  inbox: CompletionInbox,
  now: () => Date = () => new Date(),
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
    const callback = checkValue("completion-callback", parsed, { source: "completion callback" });
    if (!callback.ok) {
      const issue = callback.error.issues[0];
      return reply(400, { ok: false, error: `${issue?.path || "body"}: ${issue?.message ?? "invalid"}` });
    }
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
