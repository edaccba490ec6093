import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type AwaitingNotice, parseJson, type ReplyTo } from "@gstack/contracts";
import { awaitingKey, awaitingMessage, awaitingSlot } from "./awaiting-message";
import type { DeliveredLedger } from "./delivered-ledger";
import { type FolderFollower, followJsonFolder } from "./folder-follower";
import { personAwaitingMessage } from "./person-message";
import type { PluginSettings } from "./plugin-settings";
import type { ReportOutbox } from "./report-outbox";
import type { ReviewLinkOf } from "./review/links";
import { sentDispatches } from "./sent-dispatches";

/** A notice that does not parse yet is read again after this, once. */
const REREAD_MILLISECONDS = 250;

/**
 * Whether the daemon's own record still shows the dispatch waiting on this round: a notice
 * left from a round that was answered, revised or expired is not posted.
 */
export async function stillWaiting(settings: PluginSettings, notice: AwaitingNotice): Promise<boolean> {
  const statePath = join(settings.layout.dispatch.sessionDir(notice.dispatch_id), "state.json");
  try {
    const state = JSON.parse(await readFile(statePath, "utf8")) as {
      id?: unknown;
      status?: unknown;
      awaiting?: { round?: unknown; kind?: unknown; answer?: unknown };
    };
    return (
      state.id === notice.dispatch_id &&
      state.status === "awaiting" &&
      state.awaiting?.round === notice.round &&
      state.awaiting?.kind === notice.kind &&
      state.awaiting?.answer === undefined
    );
  } catch {
    return false;
  }
}

/** What became of a waiting notice handed to the inbox. */
export type AwaitingOutcome =
  | "delivered"
  | "already-delivered"
  | "no-session"
  /** The dispatch's completion is already in the outbox or delivered: its wait is over. */
  | "finished"
  /** A later round of the same dispatch is already in the outbox or delivered. */
  | "stale-round";

/** The round of a waiting notice's slot (`<id>.awaiting-<round>`), or undefined for another slot. */
function roundOfSlot(id: string, slot: string): number | undefined {
  const prefix = `${id}.awaiting-`;
  if (!slot.startsWith(prefix)) return undefined;
  const round = Number(slot.slice(prefix.length));
  return Number.isInteger(round) && round >= 1 ? round : undefined;
}

/**
 * Takes waiting notices into the outbox, once per dispatch and round: a round already waiting
 * there or recorded as delivered is not taken again, nor a round older than one taken, nor any
 * round once the dispatch's completion was taken; calls for the same dispatch are serialised in
 * this process. "no-session" when nothing names a session for the dispatch. The folder follower
 * and the signed callback route both come here, so a session sees the same text either way.
 */
export function awaitingInbox(
  settings: PluginSettings,
  ledger: Pick<DeliveredLedger, "has" | "list">,
  outbox: Pick<ReportOutbox, "add" | "has" | "slots">,
  reviewLink: ReviewLinkOf = async () => undefined,
) {
  const sent = sentDispatches(settings.stateDir);
  const inFlight = new Map<string, Promise<AwaitingOutcome>>();
  return {
    deliver(
      notice: AwaitingNotice,
      via: "awaiting-folder" | "awaiting-callback" = "awaiting-folder",
    ): Promise<AwaitingOutcome> {
      const id = notice.dispatch_id;
      const slot = awaitingSlot(notice);
      const previous = inFlight.get(id) ?? Promise.resolve("already-delivered" as const);
      const next = previous
        .catch(() => undefined)
        .then(async (): Promise<AwaitingOutcome> => {
          if (outbox.has(slot) || (await ledger.has(slot))) return "already-delivered";
          if (outbox.has(id) || (await ledger.has(id))) return "finished";
          const taken = [...outbox.slots(), ...(await ledger.list())];
          if (taken.some((other) => (roundOfSlot(id, other) ?? 0) > notice.round)) return "stale-round";
          const record = await sent.recall(id);
          const replyTo: ReplyTo | undefined = notice.reply_to ?? record?.reply_to;
          if (!replyTo) return "no-session";
          const remote = via === "awaiting-callback";
          const link = remote ? undefined : await reviewLink(id);
          const outcome = await outbox.add({
            key: awaitingKey(notice),
            dispatch_id: id,
            slot,
            session_key: replyTo.session_key,
            text: awaitingMessage(notice),
            person_text: personAwaitingMessage({
              notice,
              ...(record?.task ? { task: record.task } : {}),
              remote,
              ...(link ? { link } : {}),
            }),
            via,
          });
          return outcome === "queued" ? "delivered" : "already-delivered";
        });
      inFlight.set(id, next);
      void next.finally(() => {
        if (inFlight.get(id) === next) inFlight.delete(id);
      });
      return next;
    },
  };
}

export type AwaitingInbox = ReturnType<typeof awaitingInbox>;

/**
 * Follows `dispatch/awaiting/` on this host: the daemon writes `{id}.json` there each time a
 * dispatch starts to wait (and again for each new round). A notice whose dispatch still waits on
 * that round, by the daemon's own state, goes to the inbox; a stale one is left alone.
 */
export function followAwaitingFolder(
  settings: PluginSettings,
  inbox: AwaitingInbox,
  log: { warn(message: string): void },
): FolderFollower {
  const folder = settings.layout.dispatch.awaiting;
  let closed = false;
  const take = async (name: string): Promise<void> => {
    const id = name.slice(0, -".json".length);
    const path = join(folder, name);
    try {
      let notice: AwaitingNotice;
      try {
        notice = parseJson("awaiting-notice", await readFile(path, "utf8"), { source: path });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") throw error;
        await new Promise((resolve) => setTimeout(resolve, REREAD_MILLISECONDS));
        if (closed) return;
        notice = parseJson("awaiting-notice", await readFile(path, "utf8"), { source: path });
      }
      if (notice.dispatch_id !== id) {
        log.warn(`gstack: not delivering ${path}: it names dispatch ${notice.dispatch_id}, not ${id}`);
        return;
      }
      if (!(await stillWaiting(settings, notice))) return;
      await inbox.deliver(notice);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      log.warn(
        `gstack: could not deliver ${path}: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`,
      );
    }
  };
  const follower = followJsonFolder(folder, take, log);
  return {
    ready: follower.ready,
    async close() {
      closed = true;
      await follower.close();
    },
  };
}
