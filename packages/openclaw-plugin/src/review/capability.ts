import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { mkdir, open, readFile, stat } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * Review links carry a capability: `<payload>.<mac>`, both base64url, where the payload is
 * `v1|<dispatch id or *>|<expiry, Unix seconds>|<scope>` and the mac is HMAC-SHA256 of the
 * payload under the review key. A capability opens one dispatch (scope `dispatch`: read it and
 * take the actions it allows) or this host's list (scope `list`, dispatch `*`), until it expires.
 */
export type ReviewScope = "dispatch" | "list";

export interface Capability {
  dispatchId: string;
  /** Unix seconds after which the link is refused. */
  expires: number;
  scope: ReviewScope;
}

/** How long a link opens its page when the settings do not say: seven days. */
export const DEFAULT_REVIEW_TTL_HOURS = 7 * 24;

const VERSION = "v1";
const KEY_BYTES = 32;

function base64url(buffer: Buffer): string {
  return buffer.toString("base64url");
}

function mac(key: Buffer, payload: string): Buffer {
  return createHmac("sha256", key).update(payload, "utf8").digest();
}

/** The capability's text, as it goes into a link's `c` parameter. */
export function signCapability(key: Buffer, capability: Capability): string {
  if (capability.dispatchId.includes("|")) throw new Error("a dispatch id cannot contain '|'");
  const payload = [
    VERSION,
    capability.dispatchId,
    String(Math.floor(capability.expires)),
    capability.scope,
  ].join("|");
  return `${base64url(Buffer.from(payload, "utf8"))}.${base64url(mac(key, payload))}`;
}

export type CapabilityCheck =
  | { ok: true; capability: Capability }
  | { ok: false; reason: "missing" | "malformed" | "forged" | "expired" };

/**
 * Checks a capability: its mac compared in constant time before anything of its payload is
 * trusted, then its expiry against `now`.
 */
export function verifyCapability(key: Buffer, token: string | undefined | null, now: Date): CapabilityCheck {
  if (!token) return { ok: false, reason: "missing" };
  const parts = token.split(".");
  if (parts.length !== 2 || !parts[0] || !parts[1]) return { ok: false, reason: "malformed" };
  const [encodedPayload, encodedMac] = parts as [string, string];
  if (!/^[A-Za-z0-9_-]+$/.test(encodedPayload) || !/^[A-Za-z0-9_-]+$/.test(encodedMac))
    return { ok: false, reason: "malformed" };
  const payloadBytes = Buffer.from(encodedPayload, "base64url");
  const given = Buffer.from(encodedMac, "base64url");
  // Canonical encodings only: a second spelling of the same bytes is not the signed text.
  if (base64url(payloadBytes) !== encodedPayload || base64url(given) !== encodedMac)
    return { ok: false, reason: "malformed" };
  const payload = payloadBytes.toString("utf8");
  const expected = mac(key, payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: "forged" };
  const fields = payload.split("|");
  const [version, dispatchId, expiresText, scope] = fields;
  if (
    fields.length !== 4 ||
    version !== VERSION ||
    !dispatchId ||
    !expiresText ||
    !/^\d+$/.test(expiresText) ||
    (scope !== "dispatch" && scope !== "list")
  )
    return { ok: false, reason: "malformed" };
  const expires = Number(expiresText);
  if (now.getTime() / 1000 >= expires) return { ok: false, reason: "expired" };
  return { ok: true, capability: { dispatchId, expires, scope } };
}

/**
 * The per-page token that a form must send back: bound to the capability it was served under,
 * so a request forged by another site (which cannot read the page) carries none that checks.
 */
export function csrfToken(key: Buffer, capabilityText: string): string {
  return base64url(mac(key, `csrf|${capabilityText}`));
}

export function checkCsrf(key: Buffer, capabilityText: string, given: string | undefined): boolean {
  if (!given) return false;
  const expected = Buffer.from(csrfToken(key, capabilityText), "utf8");
  const actual = Buffer.from(given, "utf8");
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * The review key: 32 random bytes (hex) in a file of mode 0600, made on first use. A file
 * readable by anyone else is refused, never repaired, as every secret file of gstack is.
 */
export async function loadReviewKey(path: string): Promise<Buffer> {
  const existing = await readKeyFile(path);
  if (existing) return existing;
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  try {
    const handle = await open(path, "wx", 0o600);
    try {
      await handle.writeFile(`${randomBytes(KEY_BYTES).toString("hex")}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (error) {
    // Another process made it first: read theirs.
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
  }
  const made = await readKeyFile(path);
  if (!made) throw new Error(`${path}: the review key file is empty`);
  return made;
}

async function readKeyFile(path: string): Promise<Buffer | undefined> {
  let mode: number;
  try {
    mode = (await stat(path)).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  if ((mode & 0o077) !== 0) {
    throw new Error(
      `${path} is readable by others (mode ${(mode & 0o777).toString(8)}); the review key must be mode 600: run chmod 600 ${path}`,
    );
  }
  const text = (await readFile(path, "utf8")).trim();
  if (!text) return undefined;
  if (!/^[0-9a-f]{64}$/.test(text)) throw new Error(`${path}: the review key must be 64 hex digits`);
  return Buffer.from(text, "hex");
}
