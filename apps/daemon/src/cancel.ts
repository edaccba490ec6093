import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { readCompletionStatus } from "./completion";
import type { DaemonContext } from "./daemon-context";
import type { CancelOutcome, LiveSession } from "./session-runner";

/** What deciding a cancel asks of the other rooms. */
export interface CancelParts {
  context: DaemonContext;
  sessions: {
    get(id: string): LiveSession | undefined;
    cancel(session: LiveSession, reason: string): Promise<CancelOutcome>;
  };
  intake: {
    idle(): Promise<void>;
    isWaiting(id: string): Promise<boolean>;
    rememberCancel(id: string, reason: string): void;
  };
}

/**
 * The one place a cancel is decided, whether it came as `control/{id}.cancel` or a call: a
 * live session is cancelled by the runner, one still in `dispatch/` or being claimed is
 * remembered until it is taken, a finished one is left as it is. A cancel of an id nobody
 * knows is audited as `rejected`.
 */
export async function requestCancel(parts: CancelParts, id: string, reason: string): Promise<CancelOutcome> {
  const { context, sessions, intake } = parts;
  // A dispatch submitted just before may still be in intake: let intake settle first.
  if (!sessions.get(id)) await intake.idle();
  const session = sessions.get(id);
  if (session) return sessions.cancel(session, reason);
  const finished = await readCompletionStatus(context.layout.dispatch.completedJson(id));
  if (finished) {
    context.log(`cancel ${id}: already finished (${finished.status ?? "status unreadable"})`);
    return { outcome: "finished", ...(finished.status ? { status: finished.status } : {}) };
  }
  if (!context.stopping && (await intake.isWaiting(id))) {
    intake.rememberCancel(id, "cancel requested before the dispatch was taken");
    context.log(`cancel ${id}: remembered until the dispatch is taken`);
    return { outcome: "pending" };
  }
  await context.audit("rejected", {
    dispatch_id: id,
    reason: `cancel: no queued or running dispatch ${id}`,
    detail: { requested: reason },
  });
  context.log(`cancel ${id}: no such queued or running dispatch`);
  return { outcome: "unknown" };
}

const CANCEL_FILE = /^(dispatch-[A-Za-z0-9_-]{1,120})\.cancel$/;

/** Handles one name in `dispatch/control/`: removed, and a `{id}.cancel` asks for that cancel. */
export async function onControlFile(parts: CancelParts, path: string, name: string): Promise<void> {
  const match = CANCEL_FILE.exec(name);
  await rm(path, { force: true });
  if (!match?.[1]) return;
  await requestCancel(parts, match[1], "cancel requested");
}

/** Handles every name already in `dispatch/control/` (at start). */
export async function scanControl(parts: CancelParts): Promise<void> {
  const folder = parts.context.layout.dispatch.control;
  for (const name of await readdir(folder)) await onControlFile(parts, join(folder, name), name);
}
