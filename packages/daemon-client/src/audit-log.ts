import { open } from "node:fs/promises";
import { type AuditEvent, type AuditEventName, appendJsonLines, type GstackLayout } from "@gstack/contracts";

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
