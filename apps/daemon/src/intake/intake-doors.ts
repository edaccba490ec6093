import { randomBytes } from "node:crypto";
import { open, readdir, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { DirectoryWatch, type Dispatch, writeFileAtomic } from "@gstack/contracts";
import { exists } from "@gstack/daemon-client";
import type { DaemonContext } from "../daemon-context";
import {
  claimIncoming,
  type IntakeRules,
  inspectIncoming,
  isDispatchFileName,
  judgeDispatch,
  MAX_DISPATCH_BYTES,
  type Refusal,
  readClaimedBytes,
  rejectFile,
  settleClaim,
  UnreadableDispatchError,
} from "./intake";

/**
 * The answer to an offer: taken (made durable and queued at `position`, counting from 1), or
 * refused with the rule it broke and a sentence a person can act on.
 */
export type OfferVerdict =
  | { accepted: true; id: string; position: number }
  | { accepted: false; rule: string; reason: string; id?: string };

/** Where intake hands what it accepted: the session runner. */
export interface IntakeSessions {
  has(id: string): boolean;
  /** How many dispatches wait for a slot (for an offer's `maxQueued`). */
  readonly waiting: number;
  admit(
    dispatch: Dispatch,
    admission: { projectDir: string; firstSeen: Date; source?: string; pendingCancel?: string },
  ): Promise<number>;
}

export interface IntakeOptions {
  sessions: IntakeSessions;
  /** Dispatch content larger than this is refused (default {@link MAX_DISPATCH_BYTES}). */
  maxDispatchBytes?: number;
  /** Told of each name that appears in `dispatch/control/`. */
  onControl?: (path: string, name: string) => void;
  /** Looks at every name in `dispatch/control/` (after an event that named nothing). */
  rescanControl?: () => Promise<void>;
}

/**
 * The two doors a dispatch comes in by: a file dropped into `dispatch/` (watched, and
 * rescanned on each heartbeat) and {@link Intake.offer} in process. Both pass one at a time,
 * both are judged by {@link judgeDispatch}, both end in `claimed/{id}.json` made with a hard
 * link that fails when the id is taken, so a dispatch is taken once whichever door it used.
 * Refusals are audited; a refused file goes to `dispatch/rejected/` with its reason.
 */
export class Intake {
  private chain: Promise<void> = Promise.resolve();
  private watches: DirectoryWatch[] = [];
  /** Incoming files a claim failed on (not a vanished file): tried again on each heartbeat. */
  private readonly unclaimable = new Set<string>();
  /** Cancels that arrived before their dispatch was taken, by id. */
  private readonly pendingCancels = new Map<string, string>();

  constructor(
    private readonly context: DaemonContext,
    private readonly options: IntakeOptions,
  ) {}

  private get maxBytes(): number {
    return this.options.maxDispatchBytes ?? MAX_DISPATCH_BYTES;
  }

  /** What a dispatch is judged against right now. */
  rules(firstSeen: Date, source: string): IntakeRules {
    const { context } = this;
    return {
      source,
      now: context.now(),
      firstSeen,
      knownAgents: context.environment.knownAgents,
      ...(context.environment.secret ? { secret: context.environment.secret } : {}),
      maxBytes: this.maxBytes,
      trustedRepos: context.settings.trusted_repos,
      checkCallbackUrl: (url) => context.delivery.checkCallbackUrl(url),
    };
  }

  /** Starts watching `dispatch/` and `dispatch/control/`, then takes what is already there. */
  async open(): Promise<void> {
    const folders = this.context.layout.dispatch;
    // Names that start with a dot are writers' temporary files and the daemon's own.
    const visible = (name: string) => !name.startsWith(".");
    this.watches = [
      new DirectoryWatch(folders.incoming, {
        // A name dropped again right after its claim, or a folder named `x.json`, must reach
        // intake too, which refuses what is not a regular file and skips what is gone.
        onName: (name) => {
          if (visible(name)) this.onFile(join(folders.incoming, name));
        },
        onUnknown: () => void this.rescanSoon(),
        onError: (error) =>
          this.context.log(`watch error on dispatch/: ${error.message}; rescanning every heartbeat`),
      }),
      new DirectoryWatch(folders.control, {
        onName: (name) => {
          if (visible(name)) this.options.onControl?.(join(folders.control, name), name);
        },
        onUnknown: () => void this.options.rescanControl?.(),
        onError: (error) =>
          this.context.log(`watch error on dispatch/control/: ${error.message}; rescanning every heartbeat`),
      }),
    ];
    for (const watch of this.watches) watch.ensure();
    await this.scanIncoming();
  }

  /** Stops watching and waits for what intake already started. */
  async close(): Promise<void> {
    for (const watch of this.watches) watch.close();
    await this.chain;
  }

  /** A rescan of `dispatch/` after an event that named nothing; failures are logged. */
  private rescanSoon(): Promise<void> {
    return this.scanIncoming().catch((error: Error) =>
      this.context.log(`scan of dispatch/ failed: ${error.message}`),
    );
  }

  /** Resolves when every file seen and every offer made so far has been taken or refused. */
  idle(): Promise<void> {
    return this.chain;
  }

  /** Takes (or refuses) an entry of `dispatch/`, after everything intake is doing now. */
  onFile(path: string): void {
    const { dispatch } = this.context.layout;
    const name = basename(path);
    if (dirname(path) !== dispatch.incoming || !isDispatchFileName(name) || path === dispatch.queue) return;
    this.chain = this.chain
      .then(() => this.takeFile(path, name))
      .catch((error: Error) => {
        this.context.log(`intake error on ${name}: ${error.message}`);
      });
  }

  /**
   * Looks at every name in `dispatch/`: what the watch missed or could not be claimed before.
   * A watch that failed, or whose folder was made anew, is opened again first.
   */
  async scanIncoming(): Promise<void> {
    const { dispatch } = this.context.layout;
    for (const watch of this.watches) {
      try {
        if (await watch.renew()) this.context.log(`watching ${watch.folder} again`);
      } catch {
        // Still failing: the heartbeat's rescans carry intake until it can be watched.
      }
    }
    const names = (await readdir(dispatch.incoming))
      .filter((name) => isDispatchFileName(name) && join(dispatch.incoming, name) !== dispatch.queue)
      .sort();
    for (const name of names) this.onFile(join(dispatch.incoming, name));
    await this.chain;
  }

  /** True while a dispatch of this id may still arrive: in `dispatch/`, or a claim not yet read. */
  async isWaiting(id: string): Promise<boolean> {
    const { dispatch } = this.context.layout;
    if (await exists(join(dispatch.incoming, `${id}.json`))) return true;
    const claimedNames = await readdir(dispatch.claimed).catch(() => [] as string[]);
    return claimedNames.some((name) => name.startsWith(".claim-"));
  }

  /** Remembers a cancel for a dispatch not taken yet; applied when it is. */
  rememberCancel(id: string, reason: string): void {
    this.pendingCancels.set(id, reason);
  }

  private async takeFile(path: string, name: string): Promise<void> {
    if (this.context.stopping) return;
    const firstSeen = this.context.now();
    let problem: Refusal | undefined;
    try {
      problem = await inspectIncoming(path, this.maxBytes);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    let claimed: string | undefined;
    try {
      claimed = await claimIncoming(path, this.context.layout.dispatch.claimed);
    } catch (error) {
      // Typically dispatch/ is read-only: the file stays and is tried again on each heartbeat.
      const code = (error as NodeJS.ErrnoException).code ?? "error";
      if (!this.unclaimable.has(path)) {
        this.unclaimable.add(path);
        await this.context.audit("rejected", {
          reason: `claim: ${name} cannot be taken (${code}: ${(error as Error).message.split("\n")[0]}); left in place and tried again every heartbeat`,
          detail: { file: name, retried: true },
        });
        this.context.log(`cannot take ${name} (${code}); trying again every heartbeat`);
      }
      return;
    }
    this.unclaimable.delete(path);
    if (!claimed) return;
    // The same name may already be back; the watcher can report that as nothing at all.
    if (await exists(path)) this.onFile(path);
    await this.context.audit("received", { detail: { file: name } });
    if (problem) {
      await this.refuseFile(claimed, name, problem);
      return;
    }
    await this.takeClaimed(claimed, name, firstSeen);
  }

  /**
   * Judges a claimed file and, when it is accepted, gives it its final name and admits it.
   * `alreadySettled` is for a file recovery found already named `claimed/{id}.json`.
   */
  async takeClaimed(claimed: string, name: string, firstSeen: Date, alreadySettled = false): Promise<void> {
    let bytes: Uint8Array;
    try {
      bytes = await readClaimedBytes(claimed, this.maxBytes);
    } catch (error) {
      const rule = error instanceof UnreadableDispatchError ? error.rule : "unreadable";
      await this.refuseFile(claimed, name, { rule, reason: (error as Error).message, event: "rejected" });
      return;
    }
    const verdict = await judgeDispatch(bytes, this.rules(firstSeen, name));
    if (!verdict.ok) {
      await this.refuseFile(claimed, name, verdict.refusal);
      return;
    }
    const { dispatch } = verdict;
    if (!alreadySettled) {
      const finalPath = this.context.layout.dispatch.claimedFile(dispatch.id);
      if ((await this.isTaken(dispatch.id)) || !(await settleClaim(claimed, finalPath))) {
        await this.refuseFile(claimed, name, duplicateRefusal(dispatch.id));
        return;
      }
    }
    await this.admit(dispatch, verdict.projectDir, firstSeen, { file: name });
  }

  /**
   * The in-process door: the same checks as a dropped file, the same exactly-once rule by id,
   * and on acceptance the same durability, so once this resolves accepted a crash loses
   * nothing. `source` names who offered it, for the audit log.
   */
  offer(text: string, source: string, limits: { maxQueued?: number } = {}): Promise<OfferVerdict> {
    // Offers and dropped files go through intake one at a time, so the first of two with the
    // same id wins and the other is refused as a duplicate, whichever door each came through.
    const verdict = this.chain.then(() => this.takeOffer(text, source, limits));
    this.chain = verdict.then(
      () => undefined,
      (error: Error) => this.context.log(`intake error on an offer from ${source}: ${error.message}`),
    );
    return verdict;
  }

  private async takeOffer(
    text: string,
    source: string,
    limits: { maxQueued?: number },
  ): Promise<OfferVerdict> {
    const { context } = this;
    if (context.stopping) {
      return this.refuseOffer(source, {
        rule: "stopping",
        reason: "the daemon is stopping and takes no new work; offer it again once it has started",
        event: "rejected",
      });
    }
    const firstSeen = context.now();
    await context.audit("received", { detail: { source, via: "offer" } });
    const verdict = await judgeDispatch(text, this.rules(firstSeen, source));
    if (!verdict.ok) return this.refuseOffer(source, verdict.refusal);
    const { dispatch } = verdict;
    // The settings cap running dispatches (max_concurrent), not waiting ones, so an offer is
    // never refused as queue_full.
    const folders = context.layout.dispatch;
    const taken =
      (await this.isTaken(dispatch.id)) ||
      (await exists(join(folders.incoming, `${dispatch.id}.json`))) ||
      (await exists(folders.claimedFile(dispatch.id)));
    if (taken) return this.refuseOffer(source, duplicateRefusal(dispatch.id));
    // Checked here, one offer at a time, so a burst never takes more than the limit.
    const waiting = this.options.sessions.waiting;
    if (limits.maxQueued !== undefined && waiting >= limits.maxQueued) {
      return this.refuseOffer(source, {
        rule: "queue_full",
        reason: `${waiting} dispatches are waiting, the most this daemon queues (max_queued ${limits.maxQueued})`,
        event: "rejected",
        id: dispatch.id,
      });
    }
    // Written whole and flushed under a private name, then linked to its final name: the link
    // fails if a dropped file of the same id got there first.
    const privatePath = join(folders.claimed, `.offer-${process.pid}-${randomBytes(6).toString("hex")}`);
    await writeFileAtomic(privatePath, text, { mode: 0o600 });
    let settled: boolean;
    try {
      settled = await settleClaim(privatePath, folders.claimedFile(dispatch.id));
    } finally {
      await rm(privatePath, { force: true });
    }
    if (!settled) return this.refuseOffer(source, duplicateRefusal(dispatch.id));
    await syncFolder(folders.claimed);
    const position = await this.admit(dispatch, verdict.projectDir, firstSeen, { source });
    return { accepted: true, id: dispatch.id, position };
  }

  /** The last step of both doors: validated, then handed to the runner with any cancel that came first. */
  private async admit(
    dispatch: Dispatch,
    projectDir: string,
    firstSeen: Date,
    via: { file: string } | { source: string },
  ): Promise<number> {
    await this.context.audit("validated", {
      dispatch_id: dispatch.id,
      detail: { project: dispatch.project, agent: dispatch.target_agent, ...via },
    });
    const pendingCancel = this.pendingCancels.get(dispatch.id);
    this.pendingCancels.delete(dispatch.id);
    return this.options.sessions.admit(dispatch, {
      projectDir,
      firstSeen,
      ...("source" in via ? { source: via.source } : {}),
      ...(pendingCancel !== undefined ? { pendingCancel } : {}),
    });
  }

  /**
   * True when a dispatch id is already taken: queued, running, finished, or with a session on
   * disk. The hard link of `claimed/{id}.json` settles the races this cannot see.
   */
  private async isTaken(id: string): Promise<boolean> {
    const { dispatch } = this.context.layout;
    return (
      this.options.sessions.has(id) ||
      (await exists(dispatch.completedJson(id))) ||
      (await exists(join(dispatch.sessionDir(id), "state.json")))
    );
  }

  private async refuseFile(path: string | undefined, name: string, refusal: Refusal): Promise<void> {
    const { context } = this;
    const ts = context.now().toISOString();
    const saved = await rejectFile(path, context.layout.dispatch.rejected, {
      ...refusal,
      original: name,
      ts,
    });
    await context.audit(refusal.event, {
      ...(refusal.id ? { dispatch_id: refusal.id } : {}),
      reason: `${refusal.rule}: ${refusal.reason}`,
      detail: { file: name, saved_as: `${saved}.json` },
    });
    context.log(`${refusal.event} ${name}: ${refusal.reason.split("\n")[0]}`);
  }

  /** Audits a refused offer (as a refused file is, with no file kept) and says why. */
  async refuseOffer(source: string, refusal: Refusal): Promise<OfferVerdict> {
    await this.context.audit(refusal.event, {
      ...(refusal.id ? { dispatch_id: refusal.id } : {}),
      reason: `${refusal.rule}: ${refusal.reason}`,
      detail: { source, via: "offer", saved_as: null, note: "offered in process; no file kept in rejected/" },
    });
    this.context.log(`${refusal.event} an offer from ${source}: ${refusal.reason.split("\n")[0]}`);
    return {
      accepted: false,
      rule: refusal.rule,
      reason: refusal.reason,
      ...(refusal.id ? { id: refusal.id } : {}),
    };
  }
}

function duplicateRefusal(id: string): Refusal {
  return { rule: "duplicate", reason: `a dispatch with id ${id} was already taken`, event: "rejected", id };
}

/** Flushes a folder's entries, so a name just linked into it survives a power cut too. */
async function syncFolder(path: string): Promise<void> {
  const handle = await open(path, "r");
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
