import { digestOf } from "./fingerprint";
import { DEFAULT_CONFIDENCE } from "./reading-rules";

/**
 * What makes two versions of a learning the same for syncing: its identity, insight,
 * confidence and files. Timestamps, origin and trust do not count, so a learning that
 * travelled to the other side and back is recognised as the same one.
 */
export function contentFingerprint(entry: {
  key: string;
  type: string;
  insight: string;
  confidence?: unknown;
  files?: unknown;
}): string {
  const confidence = typeof entry.confidence === "number" ? entry.confidence : DEFAULT_CONFIDENCE;
  const files = Array.isArray(entry.files) ? entry.files : [];
  return `${entry.key}|${entry.type}|${digestOf(JSON.stringify([entry.insight, confidence, files]))}`;
}
