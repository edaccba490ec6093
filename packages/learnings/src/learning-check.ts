import { isTimestamp, learningSources, learningTypes } from "@gstack/contracts";

// Plain lists, so reading them does not build a schema (or load zod) at start-up.
const TYPES: ReadonlySet<unknown> = new Set(learningTypes);
const SOURCES: ReadonlySet<unknown> = new Set(learningSources);
const KEY = /^[a-zA-Z0-9_-]+$/;

function optionalString(value: unknown): boolean {
  return value === undefined || typeof value === "string";
}

/**
 * True when a value parsed from a JSON line certainly passes the contracts' learning schema,
 * decided without building zod's result and issue objects. It only ever answers true for a
 * value the schema accepts; false means "ask the schema" (which then names each field at
 * fault and the rule it broke), so validation is exactly the schema's.
 */
export function isPlainValidLearning(value: unknown): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const entry = value as Record<string, unknown>;
  if (!TYPES.has(entry.type)) return false;
  if (typeof entry.key !== "string" || !KEY.test(entry.key)) return false;
  if (typeof entry.insight !== "string") return false;
  if (!optionalString(entry.skill) || !optionalString(entry.origin)) return false;
  const confidence = entry.confidence;
  if (
    confidence !== undefined &&
    !(typeof confidence === "number" && Number.isInteger(confidence) && confidence >= 1 && confidence <= 10)
  ) {
    return false;
  }
  if (entry.source !== undefined && !SOURCES.has(entry.source)) return false;
  const files = entry.files;
  if (files !== undefined) {
    if (!Array.isArray(files)) return false;
    for (let index = 0; index < files.length; index++) if (typeof files[index] !== "string") return false;
  }
  if (entry.ts !== undefined && !(typeof entry.ts === "string" && isTimestamp(entry.ts))) return false;
  if (entry.trusted !== undefined && typeof entry.trusted !== "boolean") return false;
  return true;
}
