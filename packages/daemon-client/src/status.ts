import { readFile } from "node:fs/promises";
import {
  type GstackLayout,
  type Heartbeat,
  type ListSessionsResponse,
  parseValue,
  processAlive,
} from "@gstack/contracts";
import type { DeliveryStatus } from "./completion-delivery";
import { foreignHolderText } from "./daemon-lock";
import { commitsSince } from "./git";
import { type AwaitingLanding, awaitingLanding, formatAwaiting } from "./land/awaiting-list";
import { osLockHolder } from "./lock/os-lock";
import { readQueueFile, type SessionState, workDir } from "./session-state";
import { formatUsd, totalSpent } from "./spend/spend";
import { readStatesWithSummary } from "./status-summary";

/** The daemon's state as the `status` command shows it. */
export interface DaemonStatus {
  heartbeat?: Heartbeat;
  /**
   * True when the heartbeat is recent and its pid is alive, or when the heartbeat is late but
   * the daemon still holds its lock (it cannot write, e.g. with the disk full).
   */
  alive: boolean;
  /** The heartbeat is older than three intervals while the daemon holds its lock. */
  heartbeatLate?: boolean;
  /**
   * What holds the daemon's lock name when it is not a daemon of this user (another user's
   * process): the words that say so and what to do. No daemon can run meanwhile.
   */
  lockForeign?: string;
  sessions: ListSessionsResponse;
  /** Endpoints and ended deliveries as the completion delivery last wrote them. */
  delivery?: DeliveryStatus & { updated_at?: string };
  /** Finished dispatches whose branches wait to be landed or discarded. */
  awaiting?: AwaitingLanding[];
}

/** Reads `dispatch/.delivery-status.json`; undefined when it is missing or unreadable. */
export async function readDeliveryStatus(
  layout: GstackLayout,
): Promise<(DeliveryStatus & { updated_at?: string }) | undefined> {
  try {
    const value = JSON.parse(await readFile(layout.dispatch.deliveryStatus, "utf8")) as Partial<
      DeliveryStatus & { updated_at: string }
    >;
    return {
      endpoints: Array.isArray(value.endpoints) ? value.endpoints : [],
      pending: typeof value.pending === "number" ? value.pending : 0,
      failed: Array.isArray(value.failed) ? value.failed : [],
      ...(typeof value.updated_at === "string" ? { updated_at: value.updated_at } : {}),
    };
  } catch {
    return undefined;
  }
}

/**
 * The list-sessions answer from session states: the running ones (commits counted live from
 * git), then the queued ones in `queueOrder` (any it does not name at the end). The daemon builds
 * it from memory for the service API, `status` from the files. Built in the list-sessions shape,
 * not parsed again, so a status loads no schema (the service API checks its answers).
 */
export async function listSessionsOf(
  states: readonly SessionState[],
  queueOrder: readonly string[],
  maxConcurrent: number,
  now: Date,
): Promise<ListSessionsResponse> {
  const seconds = (since: string) =>
    Math.max(0, Math.round((now.getTime() - new Date(since).getTime()) / 1000));
  const running = states.filter((state) => state.status === "running" || state.status === "retrying");
  const queued = states
    .filter((state) => state.status === "queued")
    .sort((a, b) => (queueOrder.indexOf(a.id) >>> 0) - (queueOrder.indexOf(b.id) >>> 0));
  const sessions = await Promise.all(
    running.map(async (state) => {
      // Commits are counted first and every other field read after, all at one moment.
      const commits = state.started_at ? (await commitsSince(workDir(state), state.base_sha)).length : 0;
      return {
        id: state.id,
        project: state.project,
        elapsed: seconds(state.started_at ?? state.queued_at),
        agent: state.agent,
        turns: state.progress?.turns ?? 0,
        tool_uses: state.progress?.toolUses ?? 0,
        commits,
        ...(state.progress?.lastAction ? { last_action: state.progress.lastAction } : {}),
        attempt: state.attempt,
        ...spendOf(state),
      };
    }),
  );
  const awaiting = states.filter((state) => state.status === "awaiting" && state.awaiting);
  return {
    active: sessions.length,
    max_concurrent: maxConcurrent,
    queued: queued.length,
    sessions,
    queue: queued.map((state) => ({
      id: state.id,
      project: state.project,
      waiting: seconds(state.queued_at),
    })),
    ...(awaiting.length > 0
      ? {
          awaiting: awaiting.map((state) => ({
            id: state.id,
            project: state.project,
            kind: state.awaiting?.kind ?? "plan",
            waiting: seconds(state.awaiting?.since ?? state.updated_at),
            expires_at: state.awaiting?.expires_at ?? state.updated_at,
          })),
        }
      : {}),
  };
}

/**
 * Reads queue, session states and heartbeat from disk; counts commits live from git. Finished
 * dispatches come from the summary of them where their state files are unchanged since it was
 * written (see status-summary.ts), so hundreds waiting to be landed cost one read.
 */
export async function readStatus(layout: GstackLayout, now = new Date()): Promise<DaemonStatus> {
  let heartbeat: Heartbeat | undefined;
  try {
    heartbeat = parseValue("heartbeat", JSON.parse(await readFile(layout.dispatch.heartbeat, "utf8")));
  } catch {}
  const states = readStatesWithSummary(layout, now.getTime());
  const response = await listSessionsOf(
    states.filter((state): state is SessionState => state.status !== "finished"),
    await readQueueFile(layout),
    heartbeat?.max_concurrent ?? 2,
    now,
  );
  // Three missed heartbeats mean the daemon is gone (or hung); older daemons did not write
  // their interval, and wrote every 30 seconds by default.
  const staleAfterMs = 3 * (heartbeat?.interval_seconds ?? 30) * 1000;
  const fresh = heartbeat
    ? now.getTime() - new Date(heartbeat.ts).getTime() < staleAfterMs && processAlive(heartbeat.pid)
    : false;
  // A late heartbeat is not proof of death: the lock, held by the kernel, says whether it runs,
  // when its holder is the heartbeat's own process (anyone can hold the name: a process of
  // another user holding it is said so, never taken for the daemon).
  const holder =
    fresh || heartbeat === undefined
      ? undefined
      : await osLockHolder(layout.root, layout.dispatch.lock, heartbeat.pid);
  const lockForeign = holder ? foreignHolderText(holder, layout.root) : undefined;
  const late =
    heartbeat !== undefined &&
    holder !== undefined &&
    holder !== false &&
    lockForeign === undefined &&
    (holder.pid !== undefined ? holder.pid === heartbeat.pid : processAlive(heartbeat.pid));
  const delivery = await readDeliveryStatus(layout);
  const awaiting = await awaitingLanding(layout, now, states);
  return {
    ...(awaiting.length > 0 ? { awaiting } : {}),
    ...(heartbeat ? { heartbeat } : {}),
    alive: fresh || late,
    ...(late ? { heartbeatLate: true } : {}),
    ...(lockForeign ? { lockForeign } : {}),
    sessions: response,
    ...(delivery ? { delivery } : {}),
  };
}

/**
 * The list-sessions answer with the lists the text shows under it: the landings waiting for the
 * person's word and the worktrees with nothing to land (only listed when there are some).
 */
export function statusJson(status: DaemonStatus): ListSessionsResponse {
  const entry = ({ nothing: _nothing, ...item }: AwaitingLanding) => item;
  const landable = (status.awaiting ?? []).filter((item) => !item.nothing).map(entry);
  const empty = (status.awaiting ?? []).filter((item) => item.nothing).map(entry);
  return {
    ...status.sessions,
    ...(landable.length > 0 ? { awaiting_landing: landable } : {}),
    ...(empty.length > 0 ? { nothing_to_land: empty } : {}),
  };
}

/** What a session has spent so far and its cap, as list-sessions reports them. */
function spendOf(state: SessionState): { cost_usd?: number; budget_usd?: number } {
  const spent = totalSpent(state.spent_usd, state.progress?.costUsd);
  return {
    ...(spent !== undefined ? { cost_usd: spent } : {}),
    ...(state.budget_usd !== undefined ? { budget_usd: state.budget_usd } : {}),
  };
}

function formatSeconds(seconds: number): string {
  if (seconds < 60) return `${seconds}s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s`;
  return `${Math.floor(seconds / 3600)}h${String(Math.floor((seconds % 3600) / 60)).padStart(2, "0")}m`;
}

function spendText(session: { cost_usd?: number; budget_usd?: number }): string {
  if (session.cost_usd === undefined && session.budget_usd === undefined) return "";
  const spent =
    session.cost_usd === undefined ? "cost not yet reported" : `spent ${formatUsd(session.cost_usd)}`;
  return `  ${spent}${session.budget_usd !== undefined ? ` of ${formatUsd(session.budget_usd)}` : ""}`;
}

/** The status as lines for a terminal. */
export function formatStatus(status: DaemonStatus): string {
  const lines: string[] = [];
  const heartbeat = status.heartbeat;
  lines.push(
    status.alive && heartbeat
      ? `daemon running (pid ${heartbeat.pid}, ${heartbeat.mode ?? "local-only"}, last heartbeat ${heartbeat.ts}${status.heartbeatLate ? ", late" : ""})`
      : "daemon not running",
  );
  if (status.lockForeign) lines.push(status.lockForeign);
  const diskFull = status.alive ? heartbeat?.disk_full : undefined;
  if (diskFull) {
    lines.push(
      `disk full: ${diskFull.queued} queued (since ${diskFull.since}; they start by themselves when there is room)`,
    );
  }
  const { sessions } = status;
  lines.push(`${sessions.active} running of ${sessions.max_concurrent}, ${sessions.queued} queued`);
  for (const session of sessions.sessions) {
    lines.push(
      `  ▶ ${session.id}  ${session.project}  ${session.agent ?? ""}  ${formatSeconds(session.elapsed)}  turns ${session.turns ?? 0}  commits ${session.commits ?? 0}${session.attempt && session.attempt > 1 ? `  attempt ${session.attempt}` : ""}${spendText(session)}`,
    );
    if (session.last_action) lines.push(`      last: ${session.last_action}`);
  }
  for (const [index, item] of (sessions.queue ?? []).entries()) {
    lines.push(`  ${index + 1}. ${item.id}  ${item.project}  waiting ${formatSeconds(item.waiting)}`);
  }
  for (const item of sessions.awaiting ?? []) {
    lines.push(
      `  ? ${item.id}  ${item.project}  waits for an answer to its ${item.kind} (${formatSeconds(item.waiting)}, until ${item.expires_at}): gstack-dispatch status ${item.id} shows it and how to answer`,
    );
  }
  lines.push(...formatAwaiting(status.awaiting));
  lines.push(...formatDelivery(status.delivery));
  return lines.join("\n");
}

/** Each endpoint's state, pending deliveries and the deliveries that ended without success. */
function formatDelivery(delivery: DaemonStatus["delivery"]): string[] {
  if (
    !delivery ||
    (delivery.endpoints.length === 0 && delivery.failed.length === 0 && delivery.pending === 0)
  ) {
    return [];
  }
  const lines = [
    `delivery: ${delivery.pending} pending, ${delivery.failed.length} failed${delivery.updated_at ? ` (as of ${delivery.updated_at})` : ""}`,
  ];
  for (const endpoint of delivery.endpoints) {
    lines.push(
      `  ${endpoint.reachable ? "up  " : "DOWN"} ${endpoint.kind} ${endpoint.url}: ${endpoint.detail}`,
    );
  }
  for (const failure of delivery.failed) {
    lines.push(`  ✗ ${failure.dispatch_id} → ${failure.url}: ${failure.reason}`);
  }
  return lines;
}
