import {
  type AuditEvent,
  type AuditEventName,
  appendJsonLines,
  type DispatchSettings,
  type GstackLayout,
} from "@gstack/contracts";
import type { CompletionDelivery } from "./deliver/completion-delivery";
import type { AgentEnvironment } from "./environment";
import type { DiskSpace } from "./run/disk-space";

/** The fields of one audit event besides its name and time. */
export interface AuditFields {
  dispatch_id?: string;
  pid?: number;
  reason?: string;
  detail?: Record<string, unknown>;
}

/** Appends one event to `dispatch/audit.jsonl`; never rejects (a failure is logged). */
export type Audit = (event: AuditEventName, fields?: AuditFields) => Promise<void>;

/**
 * What every room of the daemon shares: where the state lives, the settings and what the
 * start-up found, the delivery, the clock, the log and the audit log, and whether it stops.
 * `settings`, `environment` and `delivery` are filled in by the start (see `lifecycle.ts`).
 */
export interface DaemonContext {
  readonly layout: GstackLayout;
  settings: DispatchSettings;
  environment: AgentEnvironment;
  delivery: CompletionDelivery;
  now(): Date;
  /** The monotonic clock for waits and durations (see `run/clock.ts`); default `performance.now`. */
  monotonicMs?: () => number;
  log(line: string): void;
  audit: Audit;
  /**
   * `trusted_repos` as config.yaml says now (with the daemon's overrides), read again for each
   * launch; absent in tests of one room, where `settings` is used.
   */
  currentTrustedRepos?: () => Promise<readonly string[]>;
  /** Whether the disk is full (see `run/disk-space.ts`); absent in tests of one room. */
  disk?: DiskSpace;
  /** True from the first stop on: nothing new is taken or started. */
  stopping: boolean;
  /** Where the service API listens, or why it could not (set when the doors open). */
  api?: { socket?: string; tcp?: string; error?: string };
}

/** An {@link Audit} writing to the layout's audit log, stamped by `now`. */
export function auditLog(layout: GstackLayout, now: () => Date, log: (line: string) => void): Audit {
  return async (event, fields = {}) => {
    const entry: AuditEvent = {
      ts: now().toISOString(),
      event,
      ...fields,
      ...(fields.reason ? { reason: fields.reason.slice(0, 1500) } : {}),
    };
    if (fields.pid === undefined) entry.pid = process.pid;
    await appendJsonLines(layout.dispatch.audit, [entry]).catch((error: Error) =>
      log(`could not write the audit log: ${error.message}`),
    );
  };
}
