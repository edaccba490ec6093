import { hash } from "node:crypto";

/** A short, stable digest of a text: the first 16 hex digits of its SHA-256. */
export function digestOf(text: string): string {
  return hash("sha256", text, "hex").slice(0, 16);
}
