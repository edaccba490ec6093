import { open } from "node:fs/promises";
import {
  type AuditEvent,
  type AuditEventName,
  appendJsonLines,
  type DispatchSettings,
  type GstackLayout,
} from "@gstack/contracts";
import type { CompletionDelivery } from "@gstack/daemon-client";
import type { DiskSpace } from "./disk-space";
import type { AgentEnvironment } from "./environment";

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
  /** The monotonic clock for waits and durations (see `clock.ts`); default `performance.now`. */
  monotonicMs?: () => number;
  log(line: string): void;
  audit: Audit;
  /**
   * `trusted_repos` as config.yaml says now (with the daemon's overrides), read again for each
   * launch; absent in tests of one room, where `settings` is used.
   */
  currentTrustedRepos?: () => Promise<readonly string[]>;
  /** Whether the disk is full (see `disk-space.ts`); absent in tests of one room. */
  disk?: DiskSpace;
  /** True from the first stop on: nothing new is taken or started. */
  stopping: boolean;
  /** Where the service API listens, or why it could not (set when the doors open). */
  api?: { socket?: string; tcp?: string; error?: string };
}

/**
 * An {@link Audit} writing to the layout's audit log, stamped by `now`. Events are written in
 * order, each as one whole line (see `appendJsonLines`: a write a full disk cuts short leaves
 * nothing behind). An event the disk has no room for is held in memory with those after it and
 * written, once and in order, by a retry every `retryMs` (default 1 s) until there is room: a
 * full disk delays the audit log and loses nothing of it while the daemon lives.
 */
export function auditLog(
  layout: GstackLayout,
  now: () => Date,
  log: (line: string) => void,
  retryMs = 1000,
): Audit {
  const held: AuditEvent[] = [];
  let writing: Promise<void> = Promise.resolve();
  let retry: NodeJS.Timeout | undefined;
  const flush = async (): Promise<void> => {
    while (held.length > 0) {
      try {
        await appendJsonLines(layout.dispatch.audit, [held[0]]);
        held.shift();
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOSPC" || code === "EDQUOT") {
          if (retry === undefined) {
            log(
              `the audit log is waiting for disk space (${held.length} event${held.length === 1 ? "" : "s"} held)`,
            );
            retry = setTimeout(() => {
              retry = undefined;
              writing = writing.then(flush);
            }, retryMs);
            retry.unref();
          }
          return;
        }
        held.shift();
        log(`could not write the audit log: ${(error as Error).message}`);
      }
    }
  };
  return async (event, fields = {}) => {
    const entry: AuditEvent = {
      ts: now().toISOString(),
      event,
      ...fields,
      ...(fields.reason ? { reason: fields.reason.slice(0, 1500) } : {}),
    };
    if (fields.pid === undefined) entry.pid = process.pid;
    held.push(entry);
    if (held.length > 1 && retry !== undefined) return;
    writing = writing.then(flush);
    await writing;
  };
}

/**
 * Whether the audit log holds an event that `matches`, read line by line (a torn or foreign line
 * is skipped). Used at start-up only, where an event a crash may have cut off is written again.
 */
export async function auditHolds(
  layout: GstackLayout,
  matches: (event: Record<string, unknown>) => boolean,
  hint?: string,
): Promise<boolean> {
  const handle = await open(layout.dispatch.audit, "r").catch(() => undefined);
  if (!handle) return false;
  try {
    for await (const line of handle.readLines({ encoding: "utf8", autoClose: false })) {
      if (hint !== undefined && !line.includes(hint)) continue;
      try {
        const event: unknown = JSON.parse(line);
        if (event && typeof event === "object" && matches(event as Record<string, unknown>)) return true;
      } catch {
        // Not an event: skipped.
      }
    }
    return false;
  } finally {
    await handle.close().catch(() => undefined);
  }
}
