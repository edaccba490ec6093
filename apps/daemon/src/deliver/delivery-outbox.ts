import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { type Completion, type GstackLayout, writeFileAtomic } from "@gstack/contracts";
import type { ReceiverKind } from "./delivery-targets";

/** One receiver of a completion and how far its delivery has got. */
export interface OutboxTarget {
  kind: ReceiverKind;
  url: string;
  state: "pending" | "delivered" | "failed";
  attempts: number;
  /** When the next attempt is due (ISO time); absent once the target is no longer pending. */
  next_attempt_at?: string;
  last_error?: string;
  delivered_at?: string;
  /** Why delivery ended without success. */
  failed_reason?: string;
}

/**
 * `delivery-outbox.json` in a session folder: everything needed to (re)build each body, and
 * each receiver's progress, so a restart continues the retry schedule where it stopped.
 */
export interface DeliveryOutbox {
  version: 1;
  dispatch_id: string;
  created_at: string;
  completion: Completion;
  report_markdown: string;
  targets: OutboxTarget[];
}

/** The outbox file of one session. */
export function outboxPath(sessionDir: string): string {
  return join(sessionDir, "delivery-outbox.json");
}

/** Written once every receiver has either taken the completion or refused it for good. */
export function deliveredMarkerPath(sessionDir: string): string {
  return join(sessionDir, "delivery-done.json");
}

/** The outbox file of the daemon before this format (one Clawvisor URL, a ready body). */
export function legacyOutboxPath(sessionDir: string): string {
  return join(sessionDir, "callback-outbox.json");
}

export async function writeOutbox(sessionDir: string, outbox: DeliveryOutbox): Promise<void> {
  await writeFileAtomic(outboxPath(sessionDir), `${JSON.stringify(outbox, null, 2)}\n`, { mode: 0o600 });
}

async function readJson(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, "utf8"));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new Error(`${path}: ${(error as Error).message}`);
  }
}

/** Reads an outbox; undefined when there is none. Throws (naming the file) for an unreadable one. */
export async function readOutbox(sessionDir: string): Promise<DeliveryOutbox | undefined> {
  const value = (await readJson(outboxPath(sessionDir))) as DeliveryOutbox | undefined;
  if (value === undefined) return undefined;
  if (value.version !== 1 || !Array.isArray(value.targets) || typeof value.dispatch_id !== "string") {
    throw new Error(
      `${outboxPath(sessionDir)}: not a delivery outbox (version 1 with dispatch_id and targets)`,
    );
  }
  return value;
}

/** An outbox left by the previous format, as the Clawvisor target it describes. */
export async function readLegacyOutbox(
  sessionDir: string,
): Promise<{ dispatch_id: string; url: string; body: Completion; attempts: number } | undefined> {
  const value = (await readJson(legacyOutboxPath(sessionDir))) as
    | { dispatch_id?: unknown; url?: unknown; body?: unknown; attempts?: unknown }
    | undefined;
  if (!value || typeof value.dispatch_id !== "string" || typeof value.url !== "string") return undefined;
  return {
    dispatch_id: value.dispatch_id,
    url: value.url,
    body: value.body as Completion,
    attempts: typeof value.attempts === "number" ? value.attempts : 0,
  };
}

export async function removeLegacyOutbox(sessionDir: string): Promise<void> {
  await rm(legacyOutboxPath(sessionDir), { force: true });
}

export async function isDelivered(sessionDir: string): Promise<boolean> {
  return (await readJson(deliveredMarkerPath(sessionDir)).catch(() => ({}))) !== undefined;
}

/** Marks a session's delivery as finished, keeping the final outbox for `status` and people. */
export async function markDelivered(sessionDir: string, outbox: DeliveryOutbox, now: Date): Promise<void> {
  await writeFileAtomic(
    deliveredMarkerPath(sessionDir),
    `${JSON.stringify(
      {
        dispatch_id: outbox.dispatch_id,
        finished_at: now.toISOString(),
        targets: outbox.targets.map((target) => ({
          kind: target.kind,
          url: target.url,
          state: target.state,
          ...(target.failed_reason ? { reason: target.failed_reason } : {}),
        })),
      },
      null,
      2,
    )}\n`,
    { mode: 0o600 },
  );
}

/**
 * Rewrites a session's outbox in the old single-callback format as a delivery outbox with one
 * Clawvisor target, keeping its attempts. False when there is none.
 */
export async function convertLegacyOutbox(
  layout: GstackLayout,
  sessionDir: string,
  now: () => Date,
): Promise<boolean> {
  const legacy = await readLegacyOutbox(sessionDir);
  if (!legacy) return false;
  const report = await readFile(layout.dispatch.completedReport(legacy.dispatch_id), "utf8").catch(() => "");
  const outbox: DeliveryOutbox = {
    version: 1,
    dispatch_id: legacy.dispatch_id,
    created_at: now().toISOString(),
    completion: legacy.body as Completion,
    report_markdown: report,
    targets: [
      {
        kind: "clawvisor",
        url: legacy.url,
        state: "pending",
        attempts: legacy.attempts,
        next_attempt_at: now().toISOString(),
      },
    ],
  };
  await writeOutbox(sessionDir, outbox);
  await removeLegacyOutbox(sessionDir);
  return true;
}
