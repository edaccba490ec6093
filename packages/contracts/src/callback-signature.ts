import { nodeCrypto } from "./lazy";

/** Header carrying the Unix time (seconds) at which a callback was signed. */
export const CALLBACK_TIMESTAMP_HEADER = "x-gstack-timestamp";
/** Header carrying `v1=` and the HMAC-SHA256 of the signed bytes as 64 lowercase hex digits. */
export const CALLBACK_SIGNATURE_HEADER = "x-gstack-signature";
/** How far a callback's timestamp may be from the receiver's clock, in seconds. */
export const CALLBACK_TOLERANCE_SECONDS = 300;

/**
 * The exact bytes a callback signature covers: `v1:`, the decimal timestamp, `:`, then the
 * raw request body exactly as sent (no re-serialization, so any JSON writer can be checked).
 */
export function callbackSignedBytes(timestamp: number, body: string | Uint8Array): Buffer {
  const bodyBytes = typeof body === "string" ? Buffer.from(body, "utf8") : Buffer.from(body);
  return Buffer.concat([Buffer.from(`v1:${timestamp}:`, "utf8"), bodyBytes]);
}

/**
 * Signs a callback body. Returns the two headers to send with it; `now` is injectable so
 * tests and replays are deterministic.
 */
export function signCallback(
  body: string | Uint8Array,
  secret: string | Buffer,
  now: Date = new Date(),
): Record<typeof CALLBACK_TIMESTAMP_HEADER | typeof CALLBACK_SIGNATURE_HEADER, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  const digest = nodeCrypto()
    .createHmac("sha256", secret)
    .update(callbackSignedBytes(timestamp, body))
    .digest("hex");
  return {
    [CALLBACK_TIMESTAMP_HEADER]: String(timestamp),
    [CALLBACK_SIGNATURE_HEADER]: `v1=${digest}`,
  };
}

export type CallbackSignatureCheck =
  | { ok: true; timestamp: number }
  | { ok: false; reason: "missing" | "malformed" | "stale" | "mismatch"; message: string };

/**
 * Verifies a callback's signature headers against its raw body, in constant time, and
 * refuses a timestamp further than `toleranceSeconds` from `now` (a replay of an old
 * request). A receiver must still drop a second delivery of the same dispatch id inside
 * the window; the signature only proves who sent it.
 */
export function verifyCallback(options: {
  body: string | Uint8Array;
  timestamp: string | undefined;
  signature: string | undefined;
  secret: string | Buffer;
  now?: Date;
  toleranceSeconds?: number;
}): CallbackSignatureCheck {
  const { timestamp, signature } = options;
  if (timestamp === undefined || signature === undefined) {
    return {
      ok: false,
      reason: "missing",
      message: `the ${CALLBACK_TIMESTAMP_HEADER} and ${CALLBACK_SIGNATURE_HEADER} headers are required`,
    };
  }
  if (!/^[0-9]{1,12}$/.test(timestamp)) {
    return { ok: false, reason: "malformed", message: `${CALLBACK_TIMESTAMP_HEADER} must be Unix seconds` };
  }
  const match = /^v1=([0-9a-f]{64})$/.exec(signature);
  if (!match?.[1]) {
    return {
      ok: false,
      reason: "malformed",
      message: `${CALLBACK_SIGNATURE_HEADER} must be 'v1=' and 64 lowercase hex digits`,
    };
  }
  const seconds = Number(timestamp);
  const nowSeconds = Math.floor((options.now ?? new Date()).getTime() / 1000);
  const tolerance = options.toleranceSeconds ?? CALLBACK_TOLERANCE_SECONDS;
  if (Math.abs(nowSeconds - seconds) > tolerance) {
    return {
      ok: false,
      reason: "stale",
      message: `the signature is ${Math.abs(nowSeconds - seconds)} s from this clock, more than ${tolerance} s`,
    };
  }
  const expected = nodeCrypto()
    .createHmac("sha256", options.secret)
    .update(callbackSignedBytes(seconds, options.body))
    .digest();
  const given = Buffer.from(match[1], "hex");
  if (!nodeCrypto().timingSafeEqual(expected, given)) {
    return { ok: false, reason: "mismatch", message: "the signature does not match the body" };
  }
  return { ok: true, timestamp: seconds };
}
