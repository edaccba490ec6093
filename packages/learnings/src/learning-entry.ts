import type { Learning } from "@gstack/contracts";

/**
 * One learning exactly as its JSON line holds it: the known fields of gstack's schema plus
 * any unknown ones, in the line's own key order.
 */
export type LearningEntry = Learning & Record<string, unknown>;

/** Where a value was read from: a file and its 1-based line. */
export interface Location {
  file: string;
  line: number;
}

/** A learning together with the place it was read from. */
export interface LocatedLearning extends Location {
  entry: LearningEntry;
}

/** Something that was skipped while reading, with the place and the reason. */
export interface ReadWarning extends Location {
  message: string;
}

/** The identity gstack uses to decide which entry is current: `key|type`. */
export function identityOf(entry: { key: string; type: string }): string {
  return `${entry.key}|${entry.type}`;
}
