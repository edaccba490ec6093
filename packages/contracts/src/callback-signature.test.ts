import { createHmac } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  CALLBACK_SIGNATURE_HEADER,
  CALLBACK_TIMESTAMP_HEADER,
  callbackSignedBytes,
  signCallback,
  verifyCallback,
} from "./callback-signature";

const secret = "s3cret-for-tests";
const now = new Date("2026-11-23T10:00:00Z");

function check(body: string, headers: Record<string, string>, options: { secret?: string; now?: Date } = {}) {
  return verifyCallback({
    body,
    timestamp: headers[CALLBACK_TIMESTAMP_HEADER],
    signature: headers[CALLBACK_SIGNATURE_HEADER],
    secret: options.secret ?? secret,
    now: options.now ?? now,
  });
}

describe("callback signatures", () => {
  it("covers 'v1:', the timestamp, ':' and the raw body", () => {
    const headers = signCallback('{"a":1}', secret, now);
    expect(headers[CALLBACK_TIMESTAMP_HEADER]).toBe("1795428000");
    const expected = createHmac("sha256", secret).update('v1:1795428000:{"a":1}').digest("hex");
    expect(headers[CALLBACK_SIGNATURE_HEADER]).toBe(`v1=${expected}`);
    expect(callbackSignedBytes(1795428000, '{"a":1}').toString()).toBe('v1:1795428000:{"a":1}');
  });

  it("accepts what it signed, for any body and any secret", () => {
    fc.assert(
      fc.property(fc.string(), fc.string({ minLength: 1 }), (body, key) => {
        expect(check(body, signCallback(body, key, now), { secret: key }).ok).toBe(true);
      }),
    );
  });

  it("refuses a changed body, a wrong secret, a replay outside the window and broken headers", () => {
    const body = '{"dispatch_id":"dispatch-a"}';
    const headers = signCallback(body, secret, now);
    expect(check(`${body} `, headers)).toMatchObject({ ok: false, reason: "mismatch" });
    expect(check(body, headers, { secret: "other" })).toMatchObject({ ok: false, reason: "mismatch" });
    expect(check(body, headers, { now: new Date(now.getTime() + 301_000) })).toMatchObject({
      ok: false,
      reason: "stale",
    });
    expect(check(body, headers, { now: new Date(now.getTime() + 299_000) }).ok).toBe(true);
    expect(check(body, {})).toMatchObject({ ok: false, reason: "missing" });
    expect(check(body, { ...headers, [CALLBACK_SIGNATURE_HEADER]: "sha256=abc" })).toMatchObject({
      ok: false,
      reason: "malformed",
    });
    expect(check(body, { ...headers, [CALLBACK_TIMESTAMP_HEADER]: "soon" })).toMatchObject({
      ok: false,
      reason: "malformed",
    });
  });

  it("a timestamp moved by the sender invalidates the signature", () => {
    const body = "{}";
    const headers = signCallback(body, secret, now);
    const moved = {
      ...headers,
      [CALLBACK_TIMESTAMP_HEADER]: String(Number(headers[CALLBACK_TIMESTAMP_HEADER]) + 1),
    };
    expect(check(body, moved)).toMatchObject({ ok: false, reason: "mismatch" });
  });
});
