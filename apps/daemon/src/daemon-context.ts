import type { DispatchSettings, GstackLayout } from "@gstack/contracts";
import type { Audit, CompletionDelivery } from "@gstack/daemon-client";
import type { DiskSpace } from "./disk-space";
import type { AgentEnvironment } from "./environment";

// The audit log lives in @gstack/daemon-client, where landing writes to it too.
export { type Audit, type AuditFields, auditHolds, auditLog } from "@gstack/daemon-client";

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
