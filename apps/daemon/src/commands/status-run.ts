import { type DispatchSnapshot, type GstackLayout, parseValue } from "@gstack/contracts";
import {
  DaemonError,
  formatStatus,
  reachDaemonApi,
  readQueueFile,
  readState,
  readStatus,
  statusJson,
} from "@gstack/daemon-client";
import type { GateChoices } from "../await/awaiting";
import { formatEndings, recentEndings } from "../finish/recent-endings";
import { fail, layoutOf, refusalLine } from "./common";

/** What `status` is asked: one dispatch, or all of them; as text or JSON; under which root. */
export interface StatusArgs {
  root?: string | undefined;
  id?: string | undefined;
  json?: boolean | undefined;
}

/**
 * `gstack-dispatch status`, without its command-line parsing: the command (status.ts) and the
 * quick start for a plain status (status-quick.ts) both run it.
 */
export async function runStatus(args: StatusArgs): Promise<void> {
  try {
    const layout = layoutOf(args);
    const api = await reachDaemonApi(layout);
    const apiRequest = api ? (await import("@gstack/daemon-client")).apiRequest : undefined;
    if (args.id) {
      const id = String(args.id);
      layout.dispatch.claimedFile(id);
      let snapshot: DispatchSnapshot | undefined;
      if (api && apiRequest) {
        const answer = await apiRequest(api, "GET", `/v1/status?dispatch_id=${encodeURIComponent(id)}`);
        if (answer.status === 404) throw new DaemonError(`no dispatch ${id} is known here`);
        if (answer.status !== 200) throw new DaemonError(refusalLine(answer.body, answer.status));
        snapshot = parseValue("dispatch-snapshot", answer.body, { source: "the service API" });
      } else {
        snapshot = await snapshotFromFiles(layout, id);
        if (!snapshot) throw new DaemonError(`no dispatch ${id} is known here`);
      }
      if (args.json) {
        process.stdout.write(`${JSON.stringify(snapshot, null, 2)}\n`);
        return;
      }
      // A gate's decisions, for its exact reply commands, are in the session state beside it.
      const waiting = snapshot.awaiting ? (await readState(layout, id))?.awaiting : undefined;
      const items =
        waiting && waiting.round === snapshot.awaiting?.round && waiting.kind === snapshot.awaiting.kind
          ? waiting.gate?.items
          : undefined;
      process.stdout.write(`${await formatSnapshot(snapshot, items)}\n`);
      return;
    }
    const current = await readStatus(layout);
    if (api && apiRequest) {
      // The live list from the daemon's memory; heartbeat and delivery still come from disk.
      const answer = await apiRequest(api, "GET", "/v1/sessions");
      if (answer.status === 200) {
        current.sessions = parseValue("list-sessions", answer.body, { source: "the service API" });
      }
    }
    if (args.json) {
      process.stdout.write(`${JSON.stringify(statusJson(current), null, 2)}\n`);
      return;
    }
    const endings = formatEndings(await recentEndings(layout));
    process.stdout.write(`${[formatStatus(current), ...endings].join("\n")}\n`);
  } catch (error) {
    fail(error);
  }
}

/** A dispatch's snapshot read from the files alone, when no daemon answers. */
export async function snapshotFromFiles(
  layout: GstackLayout,
  id: string,
): Promise<DispatchSnapshot | undefined> {
  // One dispatch's view loads what the list does not need.
  const [{ dispatchSnapshot }, { waitingOnDisk }] = await Promise.all([
    import("../service-api/snapshot"),
    import("@gstack/daemon-client"),
  ]);
  const queue = await readQueueFile(layout);
  return dispatchSnapshot(
    {
      layout,
      now: () => new Date(),
      live: () => undefined,
      position: (candidate) => {
        const index = queue.indexOf(candidate);
        return index < 0 ? undefined : index + 1;
      },
      isWaiting: (candidate) => waitingOnDisk(layout, candidate),
    },
    id,
    { report: false },
  );
}

/** One dispatch for a terminal; a waiting one with its plan (or gate) in full and how to answer. */
async function formatSnapshot(snapshot: DispatchSnapshot, items?: readonly GateChoices[]): Promise<string> {
  if (snapshot.status === "awaiting" && snapshot.awaiting) {
    const { waitingLines } = await import("../await/awaiting");
    return waitingLines(snapshot.dispatch_id, snapshot.awaiting, items).join("\n");
  }
  const lines = [`${snapshot.dispatch_id}: ${snapshot.message}`];
  if (snapshot.run && snapshot.run.commit_shas.length > 0) {
    lines.push(
      `  this run (attempt ${snapshot.run.attempt}): ${snapshot.run.commit_shas.map((sha) => sha.slice(0, 7)).join(" ")}`,
    );
  }
  if (snapshot.earlier_runs) {
    lines.push(
      `  earlier attempts: ${snapshot.earlier_runs.commit_shas.map((sha) => sha.slice(0, 7)).join(" ")}`,
    );
  }
  return lines.join("\n");
}
