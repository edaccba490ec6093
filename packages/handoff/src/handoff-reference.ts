import { HandoffError } from "./handoff-error";
import { assertHandoffId } from "./handoff-id";

/** Where a handoff lives: a handoff file, or a gstack checkpoint read as a handoff. */
export type HandoffReference =
  | { kind: "handoff"; id: string }
  | { kind: "checkpoint"; project: string; name: string };

const CHECKPOINT_REF = /^checkpoint:([^/]+)\/([^/]+?)(?:\.md)?$/;

/** The reference string of a checkpoint: `checkpoint:{project}/{file name without .md}`. */
export function checkpointReference(project: string, name: string): string {
  return `checkpoint:${project}/${name}`;
}

/** Reads `some-id` or `checkpoint:{project}/{name}`. */
export function parseHandoffReference(reference: string): HandoffReference {
  const checkpoint = CHECKPOINT_REF.exec(reference);
  if (checkpoint) return { kind: "checkpoint", project: checkpoint[1]!, name: checkpoint[2]! };
  if (reference.startsWith("checkpoint:")) {
    throw new HandoffError(
      "invalid-reference",
      `${JSON.stringify(reference)} is not a checkpoint reference; write checkpoint:{project}/{file name}`,
    );
  }
  return { kind: "handoff", id: assertHandoffId(reference) };
}
