import type { CompletionStatus, Dispatch } from "@gstack/contracts";
import type { ExitRecord, RunningAgent, SessionState } from "@gstack/daemon-client";
import type { ClockWatch } from "./clock";

/**
 * What a cancel did: `cancelling` (a running agent was signalled, or a launch under way stops
 * before its spawn; the completion follows), `cancelled` (a queued dispatch was finished as
 * cancelled), `pending` (the dispatch is still in `dispatch/` or being claimed: applied when it
 * is taken), `finished` (it had already ended; `status` is its terminal status and nothing
 * changed) or `unknown` (nobody knows the id).
 */
export interface CancelOutcome {
  outcome: "cancelling" | "cancelled" | "pending" | "finished" | "unknown";
  status?: CompletionStatus;
}

/** A dispatch the daemon holds: queued, launching, running, waiting to retry or finishing. */
export interface LiveSession {
  state: SessionState;
  dispatch: Dispatch;
  agent?: RunningAgent;
  cancelReason?: "cancel" | "shutdown";
  cancelMessage?: string;
  firstStarted?: number;
  /** When it first ran in this process, on the monotonic clock, and what it had run before. */
  runClock?: { startedMs: number; ranBeforeMs: number; watch: ClockWatch };
  retryTimer?: NodeJS.Timeout;
  persistTimer?: NodeJS.Timeout;
  /** Set once finishing has begun; settles when the completion is written. */
  finishing?: Promise<void>;
  /** Set from an agent's start until its result has been taken and the run settled. */
  runOver?: Promise<void>;
  /** A run recovery found ended (its exit recorded): settled from the record, never run again. */
  exited?: ExitRecord;
  /** Ends a wait nobody answered, when it expires. */
  expiryTimer?: NodeJS.Timeout;
}

/**
 * What the stages ask of the runner that holds the live sessions and the line: they are handed
 * this, and never import the runner.
 */
export interface SessionHost {
  readonly queue: SessionLine;
  get(id: string): LiveSession | undefined;
  /** Holds a session (recovery's waiting ones). */
  hold(session: LiveSession): void;
  /** Lets a session go: it has ended, or it waits for the next start. */
  drop(id: string): void;
  /** Launches waiting sessions while slots are free. */
  pump(): void;
}

/**
 * What the stages do to the line of dispatches waiting for a slot (the runner's queue,
 * `run/dispatch-queue.ts`): a session sent on goes to its end or its front, a slot is let go,
 * and the line is kept on disk.
 */
export interface SessionLine {
  /** Puts a dispatch at the end of the line; its place in it. */
  push(id: string): number;
  /** Puts a dispatch at the front of the line. */
  putFirst(id: string): void;
  /** Lets go of the slot a dispatch holds. */
  releaseSlot(id: string): void;
  /** Writes the line to `queue.json`. */
  save(): Promise<void>;
}
