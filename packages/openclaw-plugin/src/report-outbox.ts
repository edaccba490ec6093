import { AsyncResource } from "node:async_hooks";
import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { childPath } from "@gstack/contracts";
import { isSilentAnswer, judgeAnswer } from "./answer-judge";
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
  /** The report as the session holds it: everything the agent needs (tool calls, keys). */
  text: string;
  /**
   * The report as the person reads it on their channel: what it needs of them, what happened,
   * how to reply in plain words. Absent in entries of older versions (the session text is sent).
   */
  person_text?: string;
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
  /** When the session's history first showed the report: from then on it is never posted again. */
  seen_at?: string;
  /**
   * Set before the one more look a report gets when a stopped gateway cut its turn short (the
   * report is in the history, unanswered): it gets no second one.
   */
  looked_again_at?: string;
  /** Who gave it: the plugin's own short turn, or OpenClaw resuming the cut-off turn itself. */
  looked_by?: "plugin" | "openclaw";
  /**
   * Set before the agent's answer to the report is sent to the person (only when it says
   * something the person's message did not): sent at most once, across restarts too.
   */
  answer_sent_at?: string;
  answer?: PersonDelivery | "failed" | "silent" | "repeat";
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
  /**
   * How long OpenClaw's word that it resumes a cut-off turn is trusted while nothing comes of it
   * (its session entry still saying so, the report still unanswered). Default 3 min; after that
   * the plugin gives the report its one more look, or settles it if it already had one.
   */
  resumeGraceMs?: number;
}

/** The line each report ends with, by which the session's history shows it arrived. */
export function reportMarker(key: string): string {
  return `(report key ${key})`;
}

/** Where an entry is kept in the outbox and the delivered-ledger. */
export function slotOf(entry: Pick<OutboxEntry, "dispatch_id" | "slot">): string {
  return entry.slot ?? entry.dispatch_id;
}

/** The line that marks the one more look a report cut short by a stopped gateway gets. */
export function lookAgainMarker(keys: readonly string[]): string {
  return `(gstack: one more look at ${keys.join(", ")})`;
}

/**
 * What the agent is told of the person's side before the reports: they have read the gstack
 * message already (so the agent's answer adds, never repeats), or it could not reach them.
 */
export function personPreface(entries: readonly OutboxEntry[]): string {
  const told = entries.map((entry) => entry.told);
  if (told.every((state) => state === "sent")) {
    return "[gstack: the person has already been sent this news on their channel, in plain words with how to reply. Answer exactly NO_REPLY unless you have something to add that it does not say (something you know from memory or this conversation); whatever else you answer is sent to them as it stands.]";
  }
  if (told.some((state) => state === "failed")) {
    return "[gstack: this news could not be sent to the person's channel: your answer is what they read. Tell them in plain words, without tool names or report keys.]";
  }
  return "";
}

/** The text of one turn carrying one or several reports. */
export function batchText(entries: readonly OutboxEntry[]): string {
  const preface = personPreface(entries);
  const lead = preface ? `${preface}\n\n` : "";
  if (entries.length === 1) return `${lead}${(entries[0] as OutboxEntry).text}`;
  return [
    `${lead}${
      entries.some((entry) => entry.slot)
        ? `${entries.length} gstack reports arrived:`
        : `${entries.length} gstack dispatches ended:`
    }`,
    ...entries.map((entry, index) => `\n--- ${index + 1} of ${entries.length} ---\n${entry.text}`),
  ].join("\n");
}

/**
 * The agent's answer to the newest message of the history that contains `needle` (and is not
 * the agent's own): the visible text of the last of the agent's messages that follow it, before
 * the next message of the person; undefined when the agent has not answered it.
 */
export function answerTo(history: readonly HistoryMessage[], needle: string): string | undefined {
  let at = -1;
  for (let index = history.length - 1; index >= 0; index--) {
    const message = history[index] as HistoryMessage;
    if (message.role !== "assistant" && message.text.includes(needle)) {
      at = index;
      break;
    }
  }
  if (at < 0) return undefined;
  let answer: string | undefined;
  for (const message of history.slice(at + 1)) {
    if (message.role === "user") break;
    if (message.role === "assistant" && message.reply?.trim()) answer = message.reply.trim();
  }
  return answer;
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
  const resumeGraceMs = options.resumeGraceMs ?? 3 * 60_000;
  // When this process first saw OpenClaw say it resumes a report's cut-off turn, by slot.
  const resumeSeen = new Map<string, number>();
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
   * The person's message goes to the session's channel once, as the report's first turn starts,
   * whatever the agent then answers: marked before sending, so a process that stops mid-send
   * does not send it again.
   */
  const tellPerson = async (entry: OutboxEntry) => {
    if (entry.told_at || !options.channel.tellPerson) return;
    entry.told_at = new Date().toISOString();
    await save(entry);
    try {
      entry.told = await options.channel.tellPerson({
        sessionKey: entry.session_key,
        text: entry.person_text ?? entry.text,
      });
    } catch (error) {
      entry.told = "failed";
      warn(`could not send the report of ${entry.dispatch_id} to the person's channel`, error);
    }
    await save(entry);
  };
  /**
   * The agent's answer to a report reaches the person only when it adds to what they were
   * sent: NO_REPLY or an empty answer is nothing, an answer that mostly repeats the person's
   * message is dropped. The answer of one turn is sent once for all the reports it carried.
   */
  const passOnAnswer = async (entries: readonly OutboxEntry[], history: readonly HistoryMessage[]) => {
    const open = entries.filter((entry) => !entry.answer_sent_at);
    if (open.length === 0 || !options.channel.tellPerson) return;
    if (entries.some((entry) => entry.told === "no-route")) return;
    const first = open[0] as OutboxEntry;
    const needle = first.looked_again_at
      ? lookAgainMarker([first.key]).slice(0, -1)
      : reportMarker(first.key);
    const raw =
      answerTo(history, needle) ??
      (first.looked_again_at ? answerTo(history, reportMarker(first.key)) : undefined);
    // A report key the agent copied into its answer is for the session, not the person.
    const reply = raw
      ?.split("\n")
      .filter((line) => !line.includes("(report key "))
      .join("\n")
      .trim();
    const news = entries.map((entry) => entry.person_text ?? entry.text).join("\n");
    const told = entries.every((entry) => entry.told === "sent");
    const verdict =
      reply === undefined
        ? "silent"
        : told
          ? judgeAnswer(reply, news)
          : isSilentAnswer(reply)
            ? "silent"
            : "adds";
    const now = new Date().toISOString();
    for (const entry of open) {
      entry.answer_sent_at = now;
      if (verdict !== "adds") entry.answer = verdict;
      await save(entry);
    }
    if (verdict !== "adds" || reply === undefined) return;
    let outcome: PersonDelivery | "failed";
    try {
      outcome = await options.channel.tellPerson({ sessionKey: first.session_key, text: reply });
    } catch (error) {
      outcome = "failed";
      warn(`could not send the agent's answer on ${first.dispatch_id} to the person's channel`, error);
    }
    for (const entry of open) {
      entry.answer = outcome;
      await save(entry);
    }
  };
  const confirm = async (entry: OutboxEntry) => {
    await options.ledger.record({
      dispatch_id: entry.dispatch_id,
      session_key: entry.session_key,
      via: entry.via,
      key: entry.key,
      ...(entry.slot ? { slot: entry.slot } : {}),
      delivered_at: new Date().toISOString(),
      ...(entry.told ? { person: entry.told } : {}),
      ...(entry.answer ? { answer: entry.answer } : {}),
    });
    entries.delete(slotOf(entry));
    resumeSeen.delete(slotOf(entry));
    await rm(pathOf(slotOf(entry)), { force: true });
  };
  const warn = (message: string, error: unknown) =>
    options.log.warn(
      `gstack: ${message}: ${error instanceof Error ? (error.message.split("\n")[0] ?? "") : String(error)}`,
    );

  /**
   * Settles the session's posted reports from its history once their turn is over: shown
   * and answered, or shown in a turn that ended, is delivered; absent is posted again, unless
   * the history showed it before (OpenClaw may fold a cut-off message into the next turn); shown
   * but cut off by a stopped gateway (no answer, no turn of this process) gets one more look,
   * a short turn that asks the agent to answer it, and never a second one nor the whole report
   * again.
   */
  const settle = async (
    sessionKey: string,
    posted: OutboxEntry[],
    turnOver: boolean,
  ): Promise<"settled" | "waiting"> => {
    const history = await options.channel.history(sessionKey);
    const orphans: OutboxEntry[] = [];
    const done: OutboxEntry[] = [];
    let waiting = false;
    let resuming: boolean | undefined;
    const openclawResumes = async () => {
      resuming ??= (await options.channel.resuming?.(sessionKey)) ?? false;
      return resuming;
    };
    for (const entry of posted) {
      const standing = standingIn(history, entry.key);
      if (standing !== "absent" && !entry.seen_at) {
        entry.seen_at = new Date().toISOString();
        await save(entry);
      }
      if (standing === "answered") done.push(entry);
      else if (standing === "unanswered" && entry.run_id) {
        // A turn of this process that ended.
        if (turnOver) done.push(entry);
      } else if (standing === "unanswered" || entry.seen_at) {
        // Cut short by a stopped gateway (or folded by OpenClaw into a later turn). OpenClaw
        // resuming the cut-off turn itself is its one more look; else the plugin gives one,
        // and none after the first.
        const resumes = await openclawResumes();
        const seen = resumeSeen.get(slotOf(entry)) ?? Date.now();
        if (resumes) resumeSeen.set(slotOf(entry), seen);
        // OpenClaw's resume trusted for a while only: a recovery it gave up on (another kill,
        // a run it retired) can leave its entry saying so while no turn ever comes.
        const trusted = resumes && Date.now() - seen <= resumeGraceMs;
        if (trusted) {
          if (!entry.looked_again_at) {
            entry.looked_again_at = new Date().toISOString();
            entry.looked_by = "openclaw";
            await save(entry);
          }
          waiting = true;
        } else if (
          (entry.looked_again_at && !(resumes && entry.looked_by === "openclaw")) ||
          standing !== "unanswered"
        ) {
          done.push(entry);
        } else orphans.push(entry);
      } else if (turnOver || !entry.run_id) {
        delete entry.posted_at;
        delete entry.run_id;
        await save(entry);
      }
    }
    if (done.length > 0) {
      await passOnAnswer(done, history);
      for (const entry of done) await confirm(entry);
    }
    if (orphans.length === 0) return waiting ? "waiting" : "settled";
    const keys = orphans.map((entry) => entry.key);
    const now = new Date().toISOString();
    for (const entry of orphans) {
      entry.looked_again_at = now;
      entry.looked_by = "plugin";
      await save(entry);
    }
    let runId: string;
    try {
      runId = await options.channel.post({
        sessionKey,
        text: [
          `The gstack report${orphans.length > 1 ? "s" : ""} above arrived as OpenClaw stopped and ${orphans.length > 1 ? "were" : "was"} not answered yet.`,
          personPreface(orphans) ||
            "Answer it now as you would have; the person reads your answer in this session.",
          lookAgainMarker(keys),
        ].join("\n"),
        idempotencyKey: `${keys.join("+")}:answer`,
      });
    } catch (error) {
      // Not given: the look is still owed (a gateway still starting refuses turns).
      for (const entry of orphans) {
        delete entry.looked_again_at;
        delete entry.looked_by;
        await save(entry);
      }
      throw error;
    }
    for (const entry of orphans) {
      entry.run_id = runId;
      await save(entry);
    }
    return waiting ? "waiting" : "settled";
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
          const settled = await settle(sessionKey, posted, turnOver);
          if (settled === "waiting") {
            // OpenClaw is resuming a cut-off turn: asked again once it had time to.
            await wait(Math.min(backoff, sweepMs));
            backoff = Math.min(backoff * 2, sweepMs);
          } else backoff = 1000;
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
        // The person hears first, in their own words; the turn's text then tells the agent so.
        for (const entry of batch) await tellPerson(entry);
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
