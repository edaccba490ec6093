import { writeState } from "@gstack/daemon-client";
import { monotonicNow } from "../clock";
import type { DaemonContext } from "../daemon-context";
import { isDiskFull } from "../disk-space";
import type { LiveSession } from "../live-session";

/** How long the session has run, on the monotonic clock, over every daemon that ran it. */
export function ranMs(context: DaemonContext, session: LiveSession): number {
  const clock = session.runClock;
  if (!clock) return session.state.ran_ms ?? 0;
  return clock.ranBeforeMs + (monotonicNow(context) - clock.startedMs);
}

/** Puts the run time, and a jump of the wall clock seen meanwhile, in the state to be written. */
export function noteRunTime(context: DaemonContext, session: LiveSession): void {
  const { state } = session;
  state.ran_ms = Math.round(ranMs(context, session));
  const jump = session.runClock?.watch.jumpMs() ?? 0;
  if (jump !== 0 && state.clock_jump_ms === undefined) {
    state.clock_jump_ms = jump;
    context.log(
      `the system clock moved while ${state.id} ran (${Math.round(jump / 1000)} s); its times may be off`,
    );
  }
}

/** Writes a running session's progress at most every half second. */
export function schedulePersist(context: DaemonContext, session: LiveSession): void {
  if (session.persistTimer) return;
  session.persistTimer = setTimeout(() => {
    session.persistTimer = undefined;
    noteRunTime(context, session);
    session.state.updated_at = context.now().toISOString();
    void writeState(context.layout, session.state).catch(() => undefined);
  }, 500);
}

/** Swallows a failed write when the disk is full (noting it); rethrows anything else. */
export function unlessDiskFull(context: DaemonContext, error: unknown, what: string): void {
  if (!isDiskFull(error) || !context.disk) throw error;
  context.disk.noteFull(what, error);
}
