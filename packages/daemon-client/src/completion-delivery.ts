import type { AuditEvent, AuditEventName, AwaitingNotice, Completion, Dispatch } from "@gstack/contracts";

/**
 * How a finished dispatch's completion leaves the machine: the seam between the daemon's
 * completion step and the code that talks HTTP to Clawvisor, OpenClaw's hooks endpoint or
 * the OpenClaw plugin's signed route.
 *
 * Contract for implementers:
 * - `enqueue` is durable and idempotent: when it resolves, the delivery is on disk in the
 *   session folder and survives a kill -9; calling it again for the same session after a
 *   crash neither duplicates nor loses the delivery, and a delivery that already succeeded
 *   is not sent again.
 * - Nothing here throws for a receiver that is down or refuses: that is recorded (audit,
 *   outbox state, `status()`), never allowed to stop the daemon.
 */
export interface CompletionDelivery {
  /** Checks the configured endpoints once at start-up and reports what it found; never throws for an unreachable one. */
  start(): Promise<EndpointCheck[]>;
  /** Whether a dispatch's `callback_url` may be used, checked before the dispatch is accepted. */
  checkCallbackUrl(url: string): { ok: true } | { ok: false; reason: string };
  /** Records the delivery of a completion durably in `sessionDir`, then starts delivering it. */
  enqueue(delivery: PendingDelivery): Promise<void>;
  /**
   * Records a waiting notice (one round of a plan or gate) durably and POSTs it, signed, to the
   * OpenClaw plugin's route when `openclaw_callback_url` is set; kept until a 2xx or the end of
   * the wait. Optional: a delivery without it leaves waiting notices to the local folder.
   */
  enqueueAwaiting?(notice: AwaitingNotice): Promise<void>;
  /** Starts delivering every pending outbox found on disk (start-up and each heartbeat). */
  replay(): Promise<void>;
  /**
   * Resolves once no delivery round is in flight: every outbox `enqueue` or `replay` took up has
   * been attempted, or found not due and scheduled for later. What a caller reads then is what
   * that round did (a post sent, or none), not a guess after a wait.
   */
  settled(): Promise<void>;
  /** Endpoints and deliveries, for `gstack-dispatch status` and the heartbeat. */
  status(): DeliveryStatus;
  /** Stops retry timers and waits for posts in flight, at most `graceMs`. */
  stop(graceMs: number): Promise<void>;
}

export interface PendingDelivery {
  sessionDir: string;
  dispatch: Dispatch;
  completion: Completion;
  /** The Markdown report, from which a receiver gets the summary and the judgment items. */
  reportMarkdown: string;
}

export interface EndpointCheck {
  url: string;
  kind: "clawvisor" | "openclaw-hooks" | "gstack-receiver";
  reachable: boolean;
  /** What was found, one line, e.g. "answers (HTTP 401 to an unauthenticated probe)". */
  detail: string;
}

export interface DeliveryStatus {
  endpoints: EndpointCheck[];
  /** Deliveries still being retried. */
  pending: number;
  /** Deliveries that ended without success (a permanent refusal), newest first. */
  failed: { dispatch_id: string; url: string; reason: string }[];
}

/** What a delivery implementation needs from the daemon. */
export interface DeliveryContext {
  audit(event: AuditEventName, fields: Omit<AuditEvent, "ts" | "event">): Promise<void>;
  log(line: string): void;
}
