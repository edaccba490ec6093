import {
  type DispatchInput,
  dispatchIdSchema,
  gstackLayout,
  resolveGstackHome,
  type WrittenDispatch,
  writeDispatchFile,
} from "@gstack/contracts";
import { HandoffError } from "./handoff-error";
import { type HandoffRecord, pickUpHandoff, type StoreOptions } from "./handoff-store";
import { resumePromptOf } from "./resume-prompt";

/** Choices for turning a handoff into a dispatch. */
export interface DispatchOptions {
  /** The dispatch id; defaults to `dispatch-handoff-{handoff}`, so one handoff is never queued twice. */
  id?: string;
  /** Who dispatches; defaults to the handoff's `to` (the agent it was handed to). */
  dispatchedBy?: string;
  /** Working folder of the agent; defaults to the handoff's `project_dir`. */
  projectDir?: string;
}

/** The default dispatch id of a handoff reference. */
export function dispatchIdFor(reference: string): string {
  const slug = reference
    .replace(/^checkpoint:/, "")
    .replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/^-+|-+$/g, "");
  return `dispatch-handoff-${slug}`.slice(0, 129).replace(/-+$/, "");
}

/**
 * Turns a handoff into a dispatch for the daemon: the resume prompt becomes the task (a
 * generated one when the handoff has none); project, branch, project_dir and the handoff's
 * reference are carried. Pure; throws when there is no folder to work in.
 */
export function handoffToDispatch(record: HandoffRecord, options: DispatchOptions = {}): DispatchInput {
  const { handoff } = record;
  const projectDir = options.projectDir ?? handoff.project_dir;
  if (projectDir === undefined || projectDir === "") {
    throw new HandoffError(
      "no-project-dir",
      `${record.ref} does not say which folder to work in; pass a project folder (--project-dir)`,
    );
  }
  const id = options.id ?? dispatchIdFor(record.ref);
  if (!dispatchIdSchema.safeParse(id).success) {
    throw new HandoffError("invalid-reference", `${JSON.stringify(id)} is not a dispatch id (dispatch-…)`);
  }
  return {
    id,
    dispatched_by: options.dispatchedBy ?? handoff.to,
    task: resumePromptOf(handoff).prompt,
    project: handoff.project,
    project_dir: projectDir,
    ...(handoff.branch ? { branch: handoff.branch } : {}),
    handoff_id: record.ref,
  };
}

/**
 * Writes the dispatch for a handoff into the daemon's incoming folder (via contracts'
 * `writeDispatchFile`: temp file, then an atomic move; signed when a secret is given) and,
 * unless `pick: false`, marks a pending handoff picked up by the dispatcher.
 */
export async function dispatchHandoff(
  record: HandoffRecord,
  options: DispatchOptions & StoreOptions & { secret?: string; pick?: boolean; now?: Date } = {},
): Promise<{ dispatch: WrittenDispatch; record: HandoffRecord }> {
  const dispatch = handoffToDispatch(record, options);
  const layout = gstackLayout(options.root ?? resolveGstackHome(options.env ?? process.env));
  const written = await writeDispatchFile(layout, dispatch, {
    ...(options.secret === undefined ? {} : { secret: options.secret }),
    ...(options.now === undefined ? {} : { now: options.now }),
  });
  let updated = record;
  if (options.pick !== false && record.handoff.status === "pending") {
    try {
      updated = await pickUpHandoff(
        record.ref,
        { by: dispatch.dispatched_by, ...(options.now ? { now: options.now } : {}) },
        options,
      );
    } catch (error) {
      // The dispatch is written and stands; someone else marking the handoff first changes nothing.
      if (!HandoffError.isInstance(error) || error.code !== "already-picked-up") throw error;
    }
  }
  return { dispatch: written, record: updated };
}
