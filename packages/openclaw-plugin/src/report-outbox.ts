import { AsyncResource } from "node:async_hooks";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { childPath } from "@gstack/contracts";
import { readJsonIfPresent, writeJsonAtomic } from "./atomic-json";
import type { DeliveredLedger } from "./delivered-ledger";
import type { HistoryMessage, PersonDelivery, SessionChannel } from "./session-delivery";

/** One report waiting to be seen in its session, as kept on disk until it is. */
export interface OutboxEntry {
  /** Stable per dispatch and outcome (`gstack:<dispatch id>:<status>`): a repeat is recognised by it. */
  key: string;
  dispatch_id: string;
  /**
   * Where it is kept and recorded when it is not the dispatch's one final report: a waiting
   * notice is `<dispatch id>.awaiting-<round>`, so each round and the completion after it are
   * delivered on their own. Absent for a completion (its slot is the dispatch id).
   */
  slot?: string;
  session_key: string;
  /** The readable report, as the session will hold it. */
  text: string;
  via: "completed-folder" | "callback" | "awaiting-folder" | "awaiting-callback";
  queued_at: string;
  /** Set while a turn on it was started and not yet confirmed. */
  posted_at?: string;
  run_id?: string;
  attempts: number;
  /**
   * Set just before the report is sent to the person's channel: it is sent at most once,
   * across restarts too, and a process that stops mid-send does not send it again.
   */
  told_at?: string;
  told?: PersonDelivery | "failed";
}

export interface OutboxOptions {
  stateDir: string;
  ledger: DeliveredLedger;
  channel: SessionChannel;
  log: { warn(message: string): void; info?(message: string): void };
  /** At most this many reports go into one turn. Default 10. */
  batchSize?: number;
  /** How long one wait for a turn lasts before it is asked again. Default 30 s. */
  waitSliceMs?: number;
  /** A turn still running after this is given up and its reports posted again. Default 20 min. */
  turnLimitMs?: number;
  /** How often every session with waiting reports is tried again. Default 30 s. */
  sweepMs?: number;
}

/** The line each report ends with, by which the session's history shows it arrived. */
export function reportMarker(key: string): string {
  return `(report key ${key})`;
}

/** Where an entry is kept in the outbox and the delivered-ledger. */
export function slotOf(entry: Pick<OutboxEntry, "dispatch_id" | "slot">): string {
  return entry.slot ?? entry.dispatch_id;
}

/** The text of one turn carrying one or several reports. */
export function batchText(entries: readonly OutboxEntry[]): string {
  if (entries.length === 1) return (entries[0] as OutboxEntry).text;
  return [
    entries.some((entry) => entry.slot)
      ? `${entries.length} gstack reports arrived:`
      : `${entries.length} gstack dispatches ended:`,
    ...entries.map((entry, index) => `\n--- ${index + 1} of ${entries.length} ---\n${entry.text}`),
  ].join("\n");
}

/** Where a report stands in the session's history: absent, there and answered, or there alone. */
export function standingIn(
  history: readonly HistoryMessage[],
  key: string,
): "absent" | "answered" | "unanswered" {
  const marker = reportMarker(key);
  const at = history.findIndex((message) => message.role !== "assistant" && message.text.includes(marker));
  if (at < 0) return "absent";
  return history.slice(at + 1).some((message) => message.role === "assistant") ? "answered" : "unanswered";
}

/**
 * Reports on their way into sessions, kept as one file each under `<state>/outbox/` until
 * OpenClaw's own session history shows them, so a crash of the gateway at any point loses
 * none. Per session, one turn at a time: the first report goes at once; those arriving
 * while its turn runs go together in the next turn (at most `batchSize` to a turn). A
 * report leaves the outbox for the delivered-ledger only once its turn ended and the
 * session's history holds it.
 */
export function reportOutbox(options: OutboxOptions) {
  const folder = join(options.stateDir, "outbox");
  const batchSize = options.batchSize ?? 10;
  const waitSliceMs = options.waitSliceMs ?? 30_000;
  const turnLimitMs = options.turnLimitMs ?? 20 * 60_000;
  const sweepMs = options.sweepMs ?? 30_000;
  const pathOf = (id: string) => childPath(folder, id, ".json");
  const entries = new Map<string, OutboxEntry>();
  const running = new Map<string, Promise<void>>();
  const again = new Set<string>();
  let closed = false;
  let sweep: NodeJS.Timeout | undefined;
  // Deliveries run in the context of the plugin's service, not of whatever handed the report
  // over: a report taken from the callback route would otherwise post as that HTTP request,
  // which may not start agent turns.
  let serviceContext: AsyncResource | undefined;

  const save = (entry: OutboxEntry) => writeJsonAtomic(pathOf(slotOf(entry)), entry);
  /**
   * Once the session shows the report, the person gets it on the session's channel too,
   * whether the agent answered, said NO_REPLY, or had its answer held back.
   */
  const tellPerson = async (entry: OutboxEntry) => {
    if (entry.told_at || !options.channel.tellPerson) return;
    entry.told_at = new Date().toISOString();
    await save(entry);
    try {
      entry.told = await options.channel.tellPerson({ sessionKey: entry.session_key, text: entry.text });
    } catch (error) {
      entry.told = "failed";
      warn(`could not send the report of ${entry.dispatch_id} to the person's channel`, error);
    }
    await save(entry);
  };
  const confirm = async (entry: OutboxEntry) => {
    await tellPerson(entry);
    await options.ledger.record({
      dispatch_id: entry.dispatch_id,
      session_key: entry.session_key,
      via: entry.via,
      key: entry.key,
      ...(entry.slot ? { slot: entry.slot } : {}),
      delivered_at: new Date().toISOString(),
      ...(entry.told ? { person: entry.told } : {}),
    });
    entries.delete(slotOf(entry));
    await rm(pathOf(slotOf(entry)), { force: true });
  };
  const warn = (message: string, error: unknown) =>
    options.log.warn(
      `gstack: ${message}: ${error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error)}`,
    );

  /**
   * Settles the session's posted reports from its history once their turn is over: shown
   * and answered, or shown in a turn that ended, is delivered; absent is posted again; shown
   * but cut off by a stopped gateway (no answer, no turn of this process) gets one turn that
   * asks the agent to answer it, without the report twice in the conversation.
   */
  const settle = async (sessionKey: string, posted: OutboxEntry[], turnOver: boolean) => {
    const history = await options.channel.history(sessionKey);
    const orphans: OutboxEntry[] = [];
    for (const entry of posted) {
      const standing = standingIn(history, entry.key);
      if (standing === "answered" || (standing === "unanswered" && turnOver && entry.run_id)) {
        await confirm(entry);
      } else if (standing === "unanswered" && !entry.run_id) {
        orphans.push(entry);
      } else if (standing === "absent" || turnOver) {
        delete entry.posted_at;
        delete entry.run_id;
        await save(entry);
      }
    }
    if (orphans.length === 0) return;
    const runId = await options.channel.post({
      sessionKey,
      text: `The gstack report${orphans.length > 1 ? "s" : ""} above (${orphans
        .map((entry) => entry.key)
        .join(
          ", ",
        )}) arrived as OpenClaw stopped and ${orphans.length > 1 ? "were" : "was"} not answered yet: please tell the user now.`,
      idempotencyKey: `${orphans.map((entry) => entry.key).join("+")}:answer`,
    });
    for (const entry of orphans) {
      entry.run_id = runId;
      await save(entry);
    }
  };

  const drain = async (sessionKey: string): Promise<void> => {
    for (let backoff = 1000; !closed; ) {
      const mine = [...entries.values()].filter((entry) => entry.session_key === sessionKey);
      if (mine.length === 0) return;
      const posted = mine.filter((entry) => entry.posted_at);
      try {
        if (posted.length > 0) {
          // Reports of an earlier turn (or an earlier process) are settled from the history first.
          const runId = posted.find((entry) => entry.run_id)?.run_id;
          let turnOver = true;
          if (runId) {
            const postedAt = Date.parse(posted[0]?.posted_at ?? "");
            turnOver =
              (await waitTurn(runId, Number.isNaN(postedAt) ? Date.now() : postedAt)) !== "still-running";
          }
          if (closed) return;
          await settle(sessionKey, posted, turnOver);
          backoff = 1000;
          continue;
        }
        const batch = mine.slice(0, batchSize);
        const tries = Math.max(...batch.map((entry) => entry.attempts));
        // A report posted before and not found in the history waits a little before its next turn.
        if (tries > 0) await wait(Math.min(1000 * 2 ** (tries - 1), sweepMs));
        if (closed) return;
        // Marked before posting: a crash between the two then finds it in the history, not
        // a second copy of it.
        const now = new Date().toISOString();
        for (const entry of batch) {
          entry.posted_at = now;
          entry.attempts += 1;
          await save(entry);
        }
        const runId = await options.channel.post({
          sessionKey,
          text: batchText(batch),
          idempotencyKey: `${batch.map((entry) => entry.key).join("+")}#${tries + 1}`,
        });
        for (const entry of batch) {
          entry.run_id = runId;
          await save(entry);
        }
        backoff = 1000;
      } catch (error) {
        warn(`could not deliver to ${sessionKey} (retrying)`, error);
        await wait(backoff);
        backoff = Math.min(backoff * 2, sweepMs);
      }
    }
  };

  const waitTurn = async (runId: string, postedAt: number) => {
    for (;;) {
      if (closed) return "still-running" as const;
      const end = await options.channel.waitForTurn(runId, waitSliceMs);
      if (end !== "still-running") return end;
      if (Date.now() - postedAt > turnLimitMs) return "failed" as const;
    }
  };

  const wait = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      timer.unref?.();
    });

  const kick = (sessionKey: string) => {
    if (closed) return;
    // Before `start` the report is only kept: OpenClaw serves plugin routes before it starts
    // plugin services, and a delivery begun inside a route's request would keep that request's
    // gateway scope (no operator rights) for all its retries. `start` delivers what is kept.
    if (!serviceContext) return;
    if (running.has(sessionKey)) {
      again.add(sessionKey);
      return;
    }
    const launch = () => drain(sessionKey);
    const work = serviceContext
      .runInAsyncScope(launch)
      .catch((error) => warn(`delivery to ${sessionKey} stopped`, error))
      .finally(() => {
        running.delete(sessionKey);
        if (again.delete(sessionKey)) kick(sessionKey);
      });
    running.set(sessionKey, work);
  };

  return {
    folder,
    /** True when the report kept in this slot (a dispatch id, or a waiting notice's slot) is waiting here. */
    has(slot: string): boolean {
      return entries.has(slot);
    },
    /** The slots of every report waiting here. */
    slots(): string[] {
      return [...entries.keys()];
    },
    /** Keeps a report until its session shows it, and starts delivering it. */
    async add(entry: Omit<OutboxEntry, "attempts" | "queued_at">): Promise<"queued" | "already-queued"> {
      if (entries.has(slotOf(entry))) return "already-queued";
      const full: OutboxEntry = { ...entry, queued_at: new Date().toISOString(), attempts: 0 };
      await save(full);
      entries.set(slotOf(full), full);
      kick(full.session_key);
      return "queued";
    },
    /** Loads what an earlier process left waiting and delivers it; then sweeps periodically. */
    async start(): Promise<void> {
      serviceContext = new AsyncResource("gstack-report-outbox");
      let names: string[] = [];
      try {
        names = (await readdir(folder)).filter((name) => name.endsWith(".json") && !name.startsWith("."));
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
      for (const name of names) {
        const entry = (await readJsonIfPresent(join(folder, name))) as OutboxEntry | undefined;
        if (!entry?.dispatch_id || !entry.session_key || !entry.key) continue;
        if (await options.ledger.has(slotOf(entry))) {
          await rm(join(folder, name), { force: true });
          continue;
        }
        // A run of an earlier gateway process is not waited for: its history decides.
        delete entry.run_id;
        entries.set(slotOf(entry), entry);
      }
      for (const sessionKey of new Set([...entries.values()].map((entry) => entry.session_key)))
        kick(sessionKey);
      sweep = setInterval(() => {
        for (const sessionKey of new Set([...entries.values()].map((entry) => entry.session_key))) {
          kick(sessionKey);
        }
      }, sweepMs);
      sweep.unref?.();
    },
    /** Resolves when nothing is being delivered (for tests and a clean stop). */
    async idle(): Promise<void> {
      while (running.size > 0) await Promise.all(running.values());
    },
    /** Stops delivering; a turn still running is not waited for (its history decides at the next start). */
    async close(): Promise<void> {
      closed = true;
      if (sweep) clearInterval(sweep);
      await Promise.race([Promise.all(running.values()), wait(1000)]);
    },
  };
}

export type ReportOutbox = ReturnType<typeof reportOutbox>;
