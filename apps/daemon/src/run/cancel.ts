import { readdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import type { DaemonContext } from "../daemon-context";
import { readCompletionStatus } from "../finish/completion";
import type { CancelOutcome, LiveSession } from "../live-session";

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
  const alreadyFinished = (status: CancelOutcome["status"]): CancelOutcome => {
    context.log(`cancel ${id}: already finished (${status ?? "status unreadable"})`);
    return { outcome: "finished", ...(status ? { status } : {}) };
  };
  const session = sessions.get(id);
  if (session) {
    const outcome = await sessions.cancel(session, reason);
    // Ended while finishing: logged as one found finished, whichever way it was found.
    return outcome.outcome === "finished" ? alreadyFinished(outcome.status) : outcome;
  }
  const finished = await readCompletionStatus(context.layout.dispatch.completedJson(id));
  if (finished) return alreadyFinished(finished.status);
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

/**
 * Handles one name in `dispatch/control/`: removed, and a `{id}.cancel` asks for that cancel.
 * Whoever removes the file acts on it, so a name reported twice (an event and a rescan, or
 * the event of its own removal) is acted on once.
 */
export async function onControlFile(parts: CancelParts, path: string, name: string): Promise<void> {
  const match = CANCEL_FILE.exec(name);
  try {
    // unlink, not rm: only unlink reports a name already gone (ENOENT) to all but one caller.
    await unlink(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if (!match?.[1]) return;
  await requestCancel(parts, match[1], "cancel requested");
}

/** Handles every name already in `dispatch/control/` (at start and on each heartbeat). */
export async function scanControl(parts: CancelParts): Promise<void> {
  const folder = parts.context.layout.dispatch.control;
  for (const name of await readdir(folder)) {
    // Names that start with a dot are writers' temporary files.
    if (name.startsWith(".")) continue;
    await onControlFile(parts, join(folder, name), name).catch((error: Error) =>
      parts.context.log(`control/${name}: ${error.message}`),
    );
  }
}
