import { readFile, stat } from "node:fs/promises";
import { ContractError } from "./errors";
import { nodeCrypto } from "./lazy";

/** The field that carries the signature; it is the one field left out of the signed bytes. */
export const SIGNATURE_FIELD = "source_signature";

/**
 * Serializes a JSON value canonically (RFC 8785, JSON Canonicalization Scheme): object
 * keys sorted by UTF-16 code units, no white space, strings and numbers as JSON.stringify
 * writes them. Equal values always give equal bytes.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === "boolean" || typeof value === "string") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError("canonical JSON cannot hold NaN or Infinity");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(",")}]`;
  if (typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(",")}}`;
  }
  throw new TypeError(`canonical JSON cannot hold a ${typeof value}`);
}

/**
 * The exact bytes a dispatch signature covers: the canonical JSON of the dispatch as
 * written (before defaults are applied), without `source_signature`, encoded as UTF-8.
 */
export function signedBytes(document: Record<string, unknown>): Buffer {
  const { [SIGNATURE_FIELD]: _ignored, ...rest } = document;
  return Buffer.from(canonicalJson(rest), "utf8");
}

/** HMAC-SHA256 of {@link signedBytes}, as 64 lowercase hex digits. */
export function signDocument(document: Record<string, unknown>, secret: string | Buffer): string {
  return nodeCrypto().createHmac("sha256", secret).update(signedBytes(document)).digest("hex");
}

/** Returns a copy of the document with `source_signature` set. */
export function withSignature<T extends Record<string, unknown>>(
  document: T,
  secret: string | Buffer,
): T & { source_signature: string } {
  return { ...document, [SIGNATURE_FIELD]: signDocument(document, secret) };
}

export type SignatureCheck = { ok: true } | { ok: false; reason: "missing" | "malformed" | "mismatch" };

/** Verifies `source_signature` in constant time. */
export function verifyDocument(document: Record<string, unknown>, secret: string | Buffer): SignatureCheck {
  const given = document[SIGNATURE_FIELD];
  if (given === undefined) return { ok: false, reason: "missing" };
  if (typeof given !== "string" || !/^[0-9a-f]{64}$/.test(given)) return { ok: false, reason: "malformed" };
  const expected = Buffer.from(signDocument(document, secret), "hex");
  const actual = Buffer.from(given, "hex");
  return nodeCrypto().timingSafeEqual(expected, actual) ? { ok: true } : { ok: false, reason: "mismatch" };
}

/**
 * Reads a secret or token file, refusing one that group or others can read or write:
 * a secret in a looser file is as good as published.
 */
export async function readSecretFile(path: string): Promise<string> {
  const info = await stat(path);
  if (!info.isFile()) {
    throw new ContractError({
      kind: "secret file",
      source: path,
      issues: [
        { path: "", rule: "file", message: `is ${info.isDirectory() ? "a folder" : "not a regular file"}` },
      ],
    });
  }
  if (process.platform !== "win32" && (info.mode & 0o077) !== 0) {
    throw new ContractError({
      kind: "secret file",
      source: path,
      issues: [
        {
          path: "",
          rule: "permissions",
          message: `has mode ${(info.mode & 0o777).toString(8).padStart(3, "0")}; run 'chmod 600 ${path}' so only you can read it`,
        },
      ],
    });
  }
  const secret = (await readFile(path, "utf8")).trim();
  if (secret.length < 16) {
    throw new ContractError({
      kind: "secret file",
      source: path,
      issues: [
        { path: "", rule: "length", message: "holds fewer than 16 characters; use a longer random secret" },
      ],
    });
  }
  return secret;
}
