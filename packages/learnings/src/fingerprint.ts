import { createHash } from "node:crypto";

/** A short, stable digest of a text: the first 16 hex digits of its SHA-256. */
export function digestOf(text: string): string {
  return createHash("sha256").update(text, "utf8").digest("hex").slice(0, 16);
}
