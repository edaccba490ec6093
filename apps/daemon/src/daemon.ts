import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { access, mkdir, open, readdir, readFile, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import {
  type AuditEvent,
  type AuditEventName,
  appendJsonLines,
  type CompletionStatus,
  type Dispatch,
  type DispatchSettings,
  type GstackLayout,
  gstackLayout,
  parseJson,
  processAlive,
  resolveOpenClawWorkspace,
  writeFileAtomic,
} from "@gstack/contracts";
import { syncProject } from "@gstack/learnings";
import { type FSWatcher, watch } from "chokidar";
import type { AgentFailure, AgentRunResult, AgentStarter, RunningAgent } from "./agent-types";
import {
  type CompletionStepName,
  carryOutCompletion,
  planCompletion,
  planPath,
  readPlan,
} from "./completion";
import type { CompletionDelivery, DeliveryContext } from "./completion-delivery";
import { releaseDaemonLock, takeDaemonLock } from "./daemon-lock";
import { DispatchQueue } from "./dispatch-queue";
import { checkEnvironment } from "./environment";
import { DaemonError } from "./errors";
import { commitsSince, currentBranch, headCommit } from "./git";
import {
  claimIncoming,
  expiresAt,
  type IntakeRules,
  inspectIncoming,
  isDispatchFileName,
  judgeDispatch,
  MAX_DISPATCH_BYTES,
  type Refusal,
  readClaimed,
  readClaimedBytes,
  rejectFile,
  settleClaim,
  UnreadableDispatchError,
} from "./intake";
import { createCompletionDelivery } from "./outbox-delivery";
import { buildPrompt } from "./prompt";
import type { RetrySchedule } from "./retry-schedule";
import { startRunnerAgent } from "./runner-agent";
import { readAllStates, readQueueFile, type SessionState, writeQueueFile, writeState } from "./session-state";
import { loadSettings } from "./settings";

/** How to start a daemon. Everything but `root` has a sensible default. */
export interface DaemonOptions {
  /** The gstack state root (see `resolveGstackHome`). */
  root: string;
  /** How agents are started; defaults to the built-in process runner. */
  startAgent?: AgentStarter;
  /** The Claude Code binary; defaults to the configured command or `claude` on PATH. */
  claudeBinary?: string;
  /** Extra environment for agents. */
  agentEnv?: Record<string, string>;
  /** Receives one human-readable line per event. */
  log?: (line: string) => void;
  /** Wait before retrying after a rate limit (default 30 s) or another retryable failure (default 5 s). */
  retryDelayMs?: { rateLimit: number; other: number };
  /** Back-off between failed callback attempts (default 5 s doubling to 10 min, ended after 3 days). */
  deliverySchedule?: Partial<RetrySchedule>;
  /** Settings that override config.yaml, mostly for tests. */
  settings?: Partial<DispatchSettings>;
  maxDispatchBytes?: number;
  /** Clock, for tests of expiry. */
  now?: () => Date;
  /**
   * The OpenClaw workspace whose memory receives a dispatch's learnings, or `false` for none.
   * Default: the workspace `resolveOpenClawWorkspace` names, when that folder exists.
   */
  openclawWorkspace?: string | false;
  /**
   * Makes the delivery that sends completions to their receivers. Called once at start,
   * after the environment is checked. Default: {@link createCompletionDelivery} with the
   * configured Clawvisor and OpenClaw receivers.
   */
  delivery?: (context: DeliveryContext) => CompletionDelivery;
  /** Called before each step of finishing a dispatch; tests crash the daemon here on purpose. */
  beforeCompletionStep?: (step: CompletionStepName, id: string) => void | Promise<void>;
}

/**
 * The answer to {@link Daemon.offer}: taken (made durable and queued at `position`, counting
 * from 1), or refused with the rule it broke and a sentence a person can act on.
 */
export type OfferVerdict =
  | { accepted: true; id: string; position: number }
  | { accepted: false; rule: string; reason: string; id?: string };

/**
 * What a cancel did: `cancelling` (a running agent was signalled, or a launch under way stops
 * before its spawn; the completion follows), `cancelled` (a queued dispatch was finished as
 * cancelled), `pending` (the dispatch is still in `dispatch/` or being claimed: applied when it
 * is taken), `finished` (it had already ended; `status` is its terminal status and nothing
 * changed) or `unknown` (nobody knows the id).
 */
export interface CancelOutcome {
  outcome: "cancelling" | "cancelled" | "pending" | "finished" | "unknown";
  status?: CompletionStatus;
}

interface LiveSession {
  state: SessionState;
  dispatch: Dispatch;
  agent?: RunningAgent;
  cancelReason?: "cancel" | "shutdown";
  cancelMessage?: string;
  firstStarted?: number;
  retryTimer?: NodeJS.Timeout;
  persistTimer?: NodeJS.Timeout;
  /** Set once finishing has begun; settles when the completion is written. */
  finishing?: Promise<void>;
}

function processGroupOf(pid: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    execFile("ps", ["-o", "pgid=", "-p", String(pid)], (error, stdout) => {
      const value = Number.parseInt(stdout.trim(), 10);
      resolve(error || !Number.isFinite(value) ? undefined : value);
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The dispatch daemon: takes dispatch files from `dispatch/`, queues them, runs coding
 * agents, writes completion reports, activity and learnings, and posts callbacks. Every
 * state change is on disk before it matters, so a restart resumes where it stopped.
 */
export class Daemon {
  readonly layout: GstackLayout;
  settings!: DispatchSettings;
  private readonly options: DaemonOptions;
  private readonly startAgent: AgentStarter;
  private readonly log: (line: string) => void;
  private readonly now: () => Date;
  private readonly queue: DispatchQueue;
  private readonly sessions = new Map<string, LiveSession>();
  private watcher?: FSWatcher;
  private heartbeatTimer?: NodeJS.Timeout;
  private secret?: string;
  private claudeBinary?: string;
  private knownAgents: string[] = [];
  private disallowedTools: string[] = [];
  private stopping = false;
  private intakeChain: Promise<void> = Promise.resolve();
  private delivery!: CompletionDelivery;
  /** Incoming files a claim failed on (not a vanished file): tried again on each heartbeat. */
  private readonly unclaimable = new Set<string>();
  /** Cancels that arrived before their dispatch was taken, by id. */
  private readonly pendingCancels = new Map<string, string>();
  private startedAt = new Date();
  private lockHeld = false;
  /** Resolves when the daemon has stopped. */
  readonly stopped: Promise<void>;
  private resolveStopped!: () => void;

  constructor(options: DaemonOptions) {
    this.options = options;
    this.layout = gstackLayout(options.root);
    this.startAgent = options.startAgent ?? startRunnerAgent;
    this.log = options.log ?? (() => {});
    this.now = options.now ?? (() => new Date());
    this.queue = new DispatchQueue({
      maxConcurrent: () => this.settings.max_concurrent,
      save: (ids) => writeQueueFile(this.layout, ids),
      onSaveError: (error) => this.log(`could not save the queue: ${error.message}`),
    });
    this.stopped = new Promise((resolve) => {
      this.resolveStopped = resolve;
    });
  }

  /** Local-only mode: no Clawvisor URL, so completions stay on disk. */
  get mode(): "local-only" | "clawvisor" {
    return this.settings.clawvisor_url ? "clawvisor" : "local-only";
  }

  /** Ids of running and queued dispatches, for tests and status. */
  snapshot(): { running: string[]; queued: string[] } {
    return {
      running: [...this.sessions.values()]
        .filter((session) => session.agent)
        .map((session) => session.state.id),
      queued: [...this.queue.ids],
    };
  }

  /**
   * Checks the environment, takes the single-instance lock, recovers unfinished work, then
   * starts watching. Throws a {@link DaemonError} with one readable sentence on any problem.
   */
  async start(): Promise<void> {
    const loaded = await loadSettings(this.layout).catch((error: Error) => {
      throw new DaemonError(error.message, { cause: error });
    });
    this.settings = { ...loaded.settings, ...this.options.settings } as DispatchSettings;
    for (const warning of loaded.warnings) this.log(`warning: ${warning}`);
    const folders = this.layout.dispatch;
    for (const folder of [
      folders.incoming,
      folders.tmp,
      folders.claimed,
      folders.sessions,
      folders.completed,
      folders.rejected,
      folders.control,
    ]) {
      await mkdir(folder, { recursive: true });
    }
    await this.takeLock();
    try {
      await this.checkEnvironment();
      this.delivery = this.makeDelivery();
      try {
        await this.delivery.start();
      } catch (error) {
        this.log(`warning: checking the callback endpoints failed: ${(error as Error).message}`);
      }
      await this.recover();
    } catch (error) {
      await this.releaseLock();
      throw error;
    }
    this.startedAt = this.now();
    await this.audit("daemon_started", {
      detail: { mode: this.mode, max_concurrent: this.settings.max_concurrent, agents: this.knownAgents },
    });
    this.log(
      `gstack-dispatch started (pid ${process.pid}, ${this.mode}, max ${this.settings.max_concurrent} at once, agents: ${this.knownAgents.join(", ")})`,
    );
    this.log(`watching ${folders.incoming}`);
    await this.writeHeartbeat();
    this.heartbeatTimer = setInterval(() => {
      void this.writeHeartbeat();
      // Names the watcher did not report (dropped again within its blind window, or not
      // claimable before) are picked up here, at most one interval late.
      if (!this.stopping) {
        void this.scanIncoming().catch((error: Error) =>
          this.log(`scan of dispatch/ failed: ${error.message}`),
        );
      }
      void this.replayDeliveries();
    }, this.settings.heartbeat_seconds * 1000);
    this.watcher = watch([folders.incoming, folders.control], {
      depth: 0,
      ignoreInitial: true,
      ignored: (path: string) =>
        path.split(/[\\/]/).pop()?.startsWith(".") === true && path !== folders.incoming,
    });
    // A name dropped again right after its claim is reported as `change`, and a folder named
    // `x.json` as `addDir`: both must reach intake, which refuses what is not a regular file.
    this.watcher.on("add", (path) => this.onFile(path));
    const incomingOnly = (path: string) => {
      if (dirname(path) === this.layout.dispatch.incoming) this.onFile(path);
    };
    this.watcher.on("change", incomingOnly);
    this.watcher.on("addDir", incomingOnly);
    this.watcher.on("error", (error) => this.log(`watch error: ${(error as Error).message}`));
    await new Promise<void>((resolve) => this.watcher?.once("ready", () => resolve()));
    await this.scanIncoming();
    await this.scanControl();
    void this.replayDeliveries();
    this.pump();
  }

  private makeDelivery(): CompletionDelivery {
    const context: DeliveryContext = {
      audit: (event, fields) => this.audit(event, fields),
      log: (line) => this.log(line),
    };
    if (this.options.delivery) return this.options.delivery(context);
    return createCompletionDelivery({
      layout: this.layout,
      settings: this.settings,
      context,
      ...(this.options.deliverySchedule ? { schedule: this.options.deliverySchedule } : {}),
    });
  }

  private async replayDeliveries(): Promise<void> {
    if (this.stopping) return;
    await this.delivery.replay().catch((error: Error) => this.log(`delivery replay: ${error.message}`));
  }

  private async takeLock(): Promise<void> {
    await takeDaemonLock(this.layout);
    this.lockHeld = true;
  }

  private async releaseLock(): Promise<void> {
    if (!this.lockHeld) return;
    this.lockHeld = false;
    await releaseDaemonLock(this.layout);
  }

  private async checkEnvironment(): Promise<void> {
    const found = await checkEnvironment({
      layout: this.layout,
      settings: this.settings,
      log: this.log,
      ...(this.options.claudeBinary ? { claudeBinary: this.options.claudeBinary } : {}),
    });
    this.secret = found.secret;
    this.claudeBinary = found.claudeBinary;
    this.knownAgents = found.knownAgents;
    this.disallowedTools = found.disallowedTools;
  }

  // ---------------------------------------------------------------- recovery

  private async recover(): Promise<void> {
    const order = await readQueueFile(this.layout);
    const states = await readAllStates(this.layout);
    // Finishing that a crash interrupted is carried out from its plan first.
    for (const state of states) {
      const plan = await readPlan(this.layout, state.id);
      if (!plan) continue;
      if (state.status === "finished") {
        await rm(planPath(this.layout, state.id), { force: true });
        continue;
      }
      const dispatch = await this.readRecoveredDispatch(state);
      if (!dispatch) continue;
      this.log(`finishing ${state.id}, interrupted while it was being finished`);
      await carryOutCompletion(this.completionContext(), state, dispatch, plan, true);
    }
    const unfinished = states.filter((state) => state.status !== "finished");
    const rank = (state: SessionState) => {
      const index = order.indexOf(state.id);
      // Interrupted runs go first, then the persisted queue order.
      return state.status === "queued" ? (index < 0 ? order.length : index) : -1;
    };
    unfinished.sort((a, b) => rank(a) - rank(b) || a.queued_at.localeCompare(b.queued_at));
    for (const state of unfinished) {
      const dispatch = await this.readRecoveredDispatch(state);
      if (!dispatch) continue;
      if (state.pid !== undefined && (state.status === "running" || state.status === "retrying")) {
        await this.killOrphan(state);
      }
      const wasRunning = state.status !== "queued";
      if (wasRunning) {
        // The interrupted run counted as an attempt; the next one is told it resumes.
        state.attempt += 1;
        state.restarts = (state.restarts ?? 0) + 1;
      }
      state.status = "queued";
      delete state.pid;
      delete state.pgid;
      state.updated_at = this.now().toISOString();
      await writeState(this.layout, state);
      this.sessions.set(state.id, { state, dispatch });
      this.queue.push(state.id);
      await this.audit("recovered", {
        dispatch_id: state.id,
        detail: { was: wasRunning ? "running" : "queued", attempt: state.attempt },
      });
      this.log(`recovered ${state.id} (${wasRunning ? "interrupted run, starting again" : "still queued"})`);
    }
    // Claimed files with no state yet: the daemon stopped between claim and queue.
    for (const name of await readdir(this.layout.dispatch.claimed)) {
      const path = join(this.layout.dispatch.claimed, name);
      if (name.startsWith(".claim-")) {
        await this.takeClaimed(path, name, this.now());
        continue;
      }
      const id = name.replace(/\.json$/, "");
      if (!name.endsWith(".json") || this.sessions.has(id)) continue;
      if (states.some((state) => state.id === id)) continue;
      await this.takeClaimed(path, name, this.now(), true);
    }
    await this.queue.save();
  }

  /** The dispatch of a session found on disk, or undefined (audited, marked failed) when it cannot be read. */
  private async readRecoveredDispatch(state: SessionState): Promise<Dispatch | undefined> {
    const archived = join(this.layout.dispatch.sessionDir(state.id), "dispatch.json");
    let lastError: Error | undefined;
    for (const path of state.claimed_file === archived ? [archived] : [state.claimed_file, archived]) {
      try {
        const text = await readClaimed(path, this.options.maxDispatchBytes ?? MAX_DISPATCH_BYTES);
        const dispatch = parseJson("dispatch", text, { source: path });
        state.claimed_file = path;
        return dispatch;
      } catch (error) {
        lastError = error as Error;
      }
    }
    await this.audit("failed", {
      dispatch_id: state.id,
      reason: `cannot recover: ${lastError?.message ?? "no dispatch file"}`,
    });
    state.status = "finished";
    state.outcome = "failed";
    await writeState(this.layout, state);
    await rm(planPath(this.layout, state.id), { force: true });
    return undefined;
  }

  private completionContext() {
    return {
      layout: this.layout,
      delivery: this.delivery,
      audit: (
        event: AuditEventName,
        fields: { dispatch_id?: string; reason?: string; detail?: Record<string, unknown> },
      ) => this.audit(event, fields),
      log: this.log,
      shareLearnings: (id: string, project: string) => this.shareLearnings(id, project),
      ...(this.options.beforeCompletionStep ? { beforeStep: this.options.beforeCompletionStep } : {}),
    };
  }

  private async killOrphan(state: SessionState): Promise<void> {
    const pid = state.pid;
    if (pid === undefined || pid <= 1 || !processAlive(pid)) return;
    const group = await processGroupOf(pid);
    // Only a process still leading the group recorded for this session is ours.
    if (group === undefined || group <= 1 || group !== (state.pgid ?? pid)) return;
    try {
      process.kill(-group, "SIGTERM");
    } catch {}
    for (let waited = 0; waited < 3000 && processAlive(pid); waited += 100) await sleep(100);
    try {
      process.kill(-group, "SIGKILL");
    } catch {}
    await this.audit("orphan_killed", { dispatch_id: state.id, pid, detail: { pgid: group } });
    this.log(`killed the orphaned agent of ${state.id} (process group ${group})`);
  }

  // ---------------------------------------------------------------- intake

  private onFile(path: string): void {
    const name = basename(path);
    const folder = dirname(path);
    if (folder === this.layout.dispatch.control) {
      void this.onControl(path, name);
      return;
    }
    if (folder !== this.layout.dispatch.incoming || !isDispatchFileName(name)) return;
    if (path === this.layout.dispatch.queue) return;
    this.intakeChain = this.intakeChain
      .then(() => this.intake(path, name))
      .catch((error: Error) => {
        this.log(`intake error on ${name}: ${error.message}`);
      });
  }

  private async scanIncoming(): Promise<void> {
    const names = (await readdir(this.layout.dispatch.incoming))
      .filter(
        (name) =>
          isDispatchFileName(name) &&
          join(this.layout.dispatch.incoming, name) !== this.layout.dispatch.queue,
      )
      .sort();
    for (const name of names) this.onFile(join(this.layout.dispatch.incoming, name));
    await this.intakeChain;
  }

  /** Waits until every file seen so far has been taken or refused. */
  async idle(): Promise<void> {
    await this.intakeChain;
    await this.queue.settled();
  }

  private async intake(path: string, name: string): Promise<void> {
    if (this.stopping) return;
    const firstSeen = this.now();
    let problem: Refusal | undefined;
    try {
      problem = await inspectIncoming(path, this.options.maxDispatchBytes ?? MAX_DISPATCH_BYTES);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    let claimed: string | undefined;
    try {
      claimed = await claimIncoming(path, this.layout.dispatch.claimed);
    } catch (error) {
      // Typically dispatch/ is read-only: the file stays and is tried again on each heartbeat.
      const code = (error as NodeJS.ErrnoException).code ?? "error";
      if (!this.unclaimable.has(path)) {
        this.unclaimable.add(path);
        await this.audit("rejected", {
          reason: `claim: ${name} cannot be taken (${code}: ${(error as Error).message.split("\n")[0]}); left in place and tried again every heartbeat`,
          detail: { file: name, retried: true },
        });
        this.log(`cannot take ${name} (${code}); trying again every heartbeat`);
      }
      return;
    }
    this.unclaimable.delete(path);
    if (!claimed) return;
    // The same name may already be back; the watcher can report that as nothing at all.
    if (await exists(path)) this.onFile(path);
    await this.audit("received", { detail: { file: name } });
    if (problem) {
      await this.refuse(claimed, name, problem);
      return;
    }
    await this.takeClaimed(claimed, name, firstSeen);
  }

  /** What intake checks a dispatch against right now. */
  private intakeRules(firstSeen: Date): IntakeRules {
    return {
      source: "",
      now: this.now(),
      firstSeen,
      knownAgents: this.knownAgents,
      ...(this.secret ? { secret: this.secret } : {}),
      maxBytes: this.options.maxDispatchBytes ?? MAX_DISPATCH_BYTES,
      trustedRepos: this.settings.trusted_repos,
      checkCallbackUrl: (url) => this.delivery.checkCallbackUrl(url),
    };
  }

  /**
   * True when a dispatch id is already this daemon's: queued, running, finished, or with a
   * session on disk. The hard link of `claimed/{id}.json` settles the races this cannot see.
   */
  private async idTaken(id: string): Promise<boolean> {
    return (
      this.sessions.has(id) ||
      (await exists(this.layout.dispatch.completedJson(id))) ||
      (await exists(join(this.layout.dispatch.sessionDir(id), "state.json")))
    );
  }

  private async takeClaimed(
    claimed: string,
    name: string,
    firstSeen: Date,
    alreadySettled = false,
  ): Promise<void> {
    let bytes: Uint8Array;
    try {
      bytes = await readClaimedBytes(claimed, this.options.maxDispatchBytes ?? MAX_DISPATCH_BYTES);
    } catch (error) {
      const rule = error instanceof UnreadableDispatchError ? error.rule : "unreadable";
      await this.refuse(claimed, name, { rule, reason: (error as Error).message, event: "rejected" });
      return;
    }
    const verdict = await judgeDispatch(bytes, { ...this.intakeRules(firstSeen), source: name });
    if (!verdict.ok) {
      await this.refuse(claimed, name, verdict.refusal);
      return;
    }
    const { dispatch } = verdict;
    const finalPath = this.layout.dispatch.claimedFile(dispatch.id);
    if (!alreadySettled) {
      if ((await this.idTaken(dispatch.id)) || !(await settleClaim(claimed, finalPath))) {
        await this.refuse(claimed, name, duplicateRefusal(dispatch.id));
        return;
      }
    }
    await this.admit(dispatch, verdict.projectDir, firstSeen, { file: name });
  }

  /**
   * Queues a dispatch whose content intake accepted and whose `claimed/{id}.json` is in place:
   * audited as validated, given a state, queued (or started at once), and a cancel that came
   * first applied. Returns its position in the line, counting from 1.
   */
  private async admit(
    dispatch: Dispatch,
    projectDir: string,
    firstSeen: Date,
    via: { file: string } | { source: string },
  ): Promise<number> {
    const finalPath = this.layout.dispatch.claimedFile(dispatch.id);
    await this.audit("validated", {
      dispatch_id: dispatch.id,
      detail: { project: dispatch.project, agent: dispatch.target_agent, ...via },
    });
    const now = this.now().toISOString();
    const state: SessionState = {
      id: dispatch.id,
      project: dispatch.project,
      project_dir: projectDir,
      agent: dispatch.target_agent,
      status: "queued",
      claimed_file: finalPath,
      first_seen: firstSeen.toISOString(),
      queued_at: now,
      attempt: 1,
      retries: 0,
      include_learnings: true,
      updated_at: now,
    };
    // A dispatch that starts at once is written by its launch, with the attempt; writing it as
    // queued first would put a second synced write before the spawn. A crash in between leaves
    // only the claimed file, which recovery takes again as a first attempt.
    const startsAtOnce =
      !this.stopping &&
      this.queue.length === 0 &&
      this.queue.hasFreeSlot() &&
      !this.pendingCancels.has(dispatch.id);
    if (!startsAtOnce) await writeState(this.layout, state);
    const session: LiveSession = { state, dispatch };
    this.sessions.set(dispatch.id, session);
    const position = this.queue.push(dispatch.id);
    await this.audit("queued", {
      dispatch_id: dispatch.id,
      detail: { position, ...("source" in via ? { source: via.source } : {}) },
    });
    this.log(`queued ${dispatch.id} (${dispatch.project}: ${dispatch.task.split("\n")[0]?.slice(0, 60)})`);
    const pendingCancel = this.pendingCancels.get(dispatch.id);
    if (pendingCancel !== undefined) {
      this.pendingCancels.delete(dispatch.id);
      await this.cancelSession(session, pendingCancel);
      return position;
    }
    this.pump();
    await this.queue.save();
    return position;
  }

  // ---------------------------------------------------------------- offer

  /**
   * The in-process door next to `dispatch/`: the same checks as a dropped file, the same
   * exactly-once rule by id, and on acceptance the same durability (`claimed/{id}.json`, state,
   * queue, audit), so once this resolves accepted a crash loses nothing: the next start runs it.
   * `source` names who offered it, for the audit log. A refusal is audited; no file is kept.
   */
  offer(text: string, options: { source: string }): Promise<OfferVerdict> {
    // Offers and dropped files go through intake one at a time, so the first of two with the
    // same id wins and the other is refused as a duplicate, whichever door each came through.
    const verdict = this.intakeChain.then(() => this.takeOffer(text, options.source));
    this.intakeChain = verdict.then(
      () => undefined,
      (error: Error) => this.log(`intake error on an offer from ${options.source}: ${error.message}`),
    );
    return verdict;
  }

  private async takeOffer(text: string, source: string): Promise<OfferVerdict> {
    if (!this.settings || !this.delivery) {
      return this.refuseOffer(source, {
        rule: "not_started",
        reason: "the daemon has not started; call start() first",
        event: "rejected",
      });
    }
    if (this.stopping) {
      return this.refuseOffer(source, {
        rule: "stopping",
        reason: "the daemon is stopping and takes no new work; offer it again once it has started",
        event: "rejected",
      });
    }
    const firstSeen = this.now();
    await this.audit("received", { detail: { source, via: "offer" } });
    const verdict = await judgeDispatch(text, { ...this.intakeRules(firstSeen), source });
    if (!verdict.ok) return this.refuseOffer(source, verdict.refusal);
    const { dispatch } = verdict;
    const cap = queueCap(this.settings);
    if (cap !== undefined && this.queue.length >= cap) {
      return this.refuseOffer(source, {
        rule: "queue_full",
        reason: `${this.queue.length} dispatches are waiting, the most the queue holds`,
        event: "rejected",
        id: dispatch.id,
      });
    }
    const waiting =
      (await this.idTaken(dispatch.id)) ||
      (await exists(join(this.layout.dispatch.incoming, `${dispatch.id}.json`))) ||
      (await exists(this.layout.dispatch.claimedFile(dispatch.id)));
    if (waiting) return this.refuseOffer(source, duplicateRefusal(dispatch.id));
    // Written whole and flushed under a private name, then linked to its final name: the link
    // fails if a dropped file of the same id got there first.
    const privatePath = join(
      this.layout.dispatch.claimed,
      `.offer-${process.pid}-${randomBytes(6).toString("hex")}`,
    );
    await writeFileAtomic(privatePath, text, { mode: 0o600 });
    let settled: boolean;
    try {
      settled = await settleClaim(privatePath, this.layout.dispatch.claimedFile(dispatch.id));
    } finally {
      await rm(privatePath, { force: true });
    }
    if (!settled) return this.refuseOffer(source, duplicateRefusal(dispatch.id));
    await syncFolder(this.layout.dispatch.claimed);
    const position = await this.admit(dispatch, verdict.projectDir, firstSeen, { source });
    return { accepted: true, id: dispatch.id, position };
  }

  private async refuseOffer(source: string, refusal: Refusal): Promise<OfferVerdict> {
    await this.audit(refusal.event, {
      ...(refusal.id ? { dispatch_id: refusal.id } : {}),
      reason: `${refusal.rule}: ${refusal.reason}`,
      detail: { source, via: "offer", saved_as: null, note: "offered in process; no file kept in rejected/" },
    });
    this.log(`${refusal.event} an offer from ${source}: ${refusal.reason.split("\n")[0]}`);
    return {
      accepted: false,
      rule: refusal.rule,
      reason: refusal.reason,
      ...(refusal.id ? { id: refusal.id } : {}),
    };
  }

  private async refuse(path: string | undefined, name: string, refusal: Refusal): Promise<void> {
    const ts = this.now().toISOString();
    const saved = await rejectFile(path, this.layout.dispatch.rejected, { ...refusal, original: name, ts });
    await this.audit(refusal.event, {
      ...(refusal.id ? { dispatch_id: refusal.id } : {}),
      reason: `${refusal.rule}: ${refusal.reason}`,
      detail: { file: name, saved_as: `${saved}.json` },
    });
    this.log(`${refusal.event} ${name}: ${refusal.reason.split("\n")[0]}`);
  }

  // ---------------------------------------------------------------- control

  private async scanControl(): Promise<void> {
    for (const name of await readdir(this.layout.dispatch.control)) {
      await this.onControl(join(this.layout.dispatch.control, name), name);
    }
  }

  private async onControl(path: string, name: string): Promise<void> {
    const match = /^(dispatch-[A-Za-z0-9_-]{1,120})\.cancel$/.exec(name);
    await rm(path, { force: true });
    if (!match?.[1]) return;
    await this.requestCancel(match[1], "cancel requested");
  }

  /**
   * The one place a cancel is decided, whether it came as `control/{id}.cancel` or a call:
   * a running agent is signalled, a queued dispatch is finished as cancelled, one still in
   * `dispatch/` or being claimed is remembered until it is taken, a finished one is left as
   * it is. Every cancel of an id nobody knows is audited.
   */
  async requestCancel(id: string, reason: string): Promise<CancelOutcome> {
    // A dispatch submitted just before may still be in intake: let intake settle first.
    if (!this.sessions.has(id)) await this.intakeChain;
    const session = this.sessions.get(id);
    if (session) return this.cancelSession(session, reason);
    const finished = await readCompletionStatus(this.layout.dispatch.completedJson(id));
    if (finished) {
      this.log(`cancel ${id}: already finished (${finished.status ?? "status unreadable"})`);
      return { outcome: "finished", ...(finished.status ? { status: finished.status } : {}) };
    }
    if (!this.stopping) {
      const claimedNames = await readdir(this.layout.dispatch.claimed).catch(() => [] as string[]);
      const waiting =
        (await exists(join(this.layout.dispatch.incoming, `${id}.json`))) ||
        claimedNames.some((claimedName) => claimedName.startsWith(".claim-"));
      if (waiting) {
        // Applied when intake takes the dispatch (see admit).
        this.pendingCancels.set(id, "cancel requested before the dispatch was taken");
        this.log(`cancel ${id}: remembered until the dispatch is taken`);
        return { outcome: "pending" };
      }
    }
    await this.audit("rejected", {
      dispatch_id: id,
      reason: `cancel: no queued or running dispatch ${id}`,
      detail: { requested: reason },
    });
    this.log(`cancel ${id}: no such queued or running dispatch`);
    return { outcome: "unknown" };
  }

  /**
   * Cancels a queued or running dispatch. Returns false when the id is unknown.
   * @deprecated Use {@link requestCancel}, which says what the cancel did.
   */
  async cancel(id: string, reason: string): Promise<boolean> {
    const { outcome } = await this.requestCancel(id, reason);
    return outcome === "cancelling" || outcome === "cancelled";
  }

  private async cancelSession(session: LiveSession, reason: string): Promise<CancelOutcome> {
    const id = session.state.id;
    if (session.finishing) {
      // Its outcome is already decided: the cancel changes nothing.
      await session.finishing;
      const finished = await readCompletionStatus(this.layout.dispatch.completedJson(id));
      return { outcome: "finished", ...(finished?.status ? { status: finished.status } : {}) };
    }
    if (session.agent) {
      session.cancelReason = "cancel";
      this.log(`cancelling ${id}: ${reason}`);
      session.agent.cancel(reason);
      return { outcome: "cancelling" };
    }
    if (this.queue.holdsSlot(id) && !session.retryTimer) {
      // Being launched: the launch sees this before it starts the agent.
      session.cancelReason = "cancel";
      session.cancelMessage = reason;
      this.log(`cancelling ${id}: ${reason}`);
      return { outcome: "cancelling" };
    }
    this.queue.remove(id);
    if (session.retryTimer) clearTimeout(session.retryTimer);
    session.retryTimer = undefined;
    await this.queue.save();
    await this.finish(session, "cancelled", {
      failure: { kind: "cancelled", retryable: false, message: reason, retryWithoutLearnings: false },
    });
    return { outcome: "cancelled", status: "cancelled" };
  }

  // ---------------------------------------------------------------- running

  private activeCount(): number {
    return this.queue.active;
  }

  private pump(): void {
    while (!this.stopping) {
      const id = this.queue.next();
      if (id === undefined) return;
      const session = this.sessions.get(id);
      if (!session) {
        this.queue.releaseSlot(id);
        continue;
      }
      void this.queue.save();
      void this.launch(session).catch((error: Error) => {
        this.log(`could not start ${session.state.id}: ${error.message}`);
        void this.finish(session, "failed", {
          failure: {
            kind: "spawn_error",
            retryable: false,
            message: error.message,
            retryWithoutLearnings: false,
          },
        });
      });
    }
  }

  private async launch(session: LiveSession): Promise<void> {
    const { state, dispatch } = session;
    const expiry = expiresAt(dispatch, new Date(state.first_seen));
    if (state.attempt === 1 && expiry && expiry.getTime() <= this.now().getTime()) {
      await this.audit("expired", {
        dispatch_id: state.id,
        reason: `expired at ${expiry.toISOString()} while queued`,
      });
      await this.finish(session, "cancelled", {
        failure: {
          kind: "cancelled",
          retryable: false,
          message: `expired at ${expiry.toISOString()} before it could start`,
          retryWithoutLearnings: false,
        },
      });
      return;
    }
    // The attempt is on disk before the agent starts, so a crash from here on counts it; the
    // write overlaps the git queries below.
    state.status = state.attempt > 1 ? "retrying" : "running";
    state.updated_at = this.now().toISOString();
    const persisted = writeState(this.layout, state);
    if (state.started_at === undefined) {
      state.started_at = this.now().toISOString();
      const [baseSha, branch] = await Promise.all([
        headCommit(state.project_dir),
        currentBranch(state.project_dir),
      ]);
      if (baseSha) state.base_sha = baseSha;
      if (branch) state.branch = branch;
    }
    session.firstStarted ??= new Date(state.started_at).getTime();
    const agentConfig = this.settings.agents?.[state.agent];
    const resume =
      (state.restarts ?? 0) > 0
        ? {
            ...(state.branch ? { branch: state.branch } : {}),
            commits: (await commitsSince(state.project_dir, state.base_sha)).map(
              (commit) => `${commit.sha.slice(0, 7)} ${commit.subject}`,
            ),
          }
        : undefined;
    const prompt = buildPrompt(dispatch, {
      dispatchFile: state.claimed_file,
      includeLearnings: state.include_learnings,
      attempt: state.attempt,
      ...(resume ? { resume } : {}),
    });
    await persisted;
    const sessionDir = this.layout.dispatch.sessionDir(state.id);
    if (session.cancelReason === "cancel") {
      await this.finish(session, "cancelled", {
        failure: {
          kind: "cancelled",
          retryable: false,
          message: session.cancelMessage ?? "cancel requested",
          retryWithoutLearnings: false,
        },
      });
      return;
    }
    const agent = this.startAgent({
      agent: state.agent,
      prompt,
      cwd: state.project_dir,
      env: {
        ...agentConfig?.env,
        ...this.options.agentEnv,
        GSTACK_DISPATCH_ID: state.id,
        GSTACK_HOME: this.layout.root,
      },
      allowedTools: this.settings.allowed_tools ?? [],
      disallowedTools: this.disallowedTools,
      ...(state.agent !== "claude" && agentConfig ? { command: agentConfig.command } : {}),
      ...(this.claudeBinary ? { binary: this.claudeBinary } : {}),
      timeoutMs: Math.max(
        1000,
        this.settings.session_timeout_seconds * 1000 - (this.now().getTime() - session.firstStarted),
      ),
      streamFile: join(sessionDir, `stream-${state.attempt}.jsonl`),
      onProgress: (progress) => {
        state.progress = progress;
        this.schedulePersist(session);
      },
    });
    session.agent = agent;
    state.status = state.attempt > 1 ? "retrying" : "running";
    if (agent.pid > 1) {
      state.pid = agent.pid;
      state.pgid = agent.pid;
    }
    state.updated_at = this.now().toISOString();
    await writeState(this.layout, state);
    await this.audit("spawned", {
      dispatch_id: state.id,
      pid: agent.pid,
      detail: { attempt: state.attempt, agent: state.agent },
    });
    this.log(`started ${state.id} with ${state.agent} (pid ${agent.pid}, attempt ${state.attempt})`);
    const result = await agent.done;
    session.agent = undefined;
    if (session.persistTimer) clearTimeout(session.persistTimer);
    session.persistTimer = undefined;
    state.progress = result.progress;
    await this.settle(session, result);
  }

  private schedulePersist(session: LiveSession): void {
    if (session.persistTimer) return;
    session.persistTimer = setTimeout(() => {
      session.persistTimer = undefined;
      session.state.updated_at = this.now().toISOString();
      void writeState(this.layout, session.state).catch(() => undefined);
    }, 500);
  }

  private async settle(session: LiveSession, result: AgentRunResult): Promise<void> {
    const { state } = session;
    if (result.cancelled && session.cancelReason === "shutdown") {
      // Interrupted by the daemon stopping: keep it for the next start.
      state.status = "queued";
      delete state.pid;
      delete state.pgid;
      await writeState(this.layout, state);
      this.queue.releaseSlot(state.id);
      this.queue.putFirst(state.id);
      await this.queue.save();
      await this.audit("cancelled", {
        dispatch_id: state.id,
        reason: "daemon stopping; queued again for the next start",
      });
      this.sessions.delete(state.id);
      this.maybeStopped();
      return;
    }
    if (result.cancelled) {
      await this.finish(session, "cancelled", { result });
      return;
    }
    if (result.timedOut) {
      await this.finish(session, "timeout", { result });
      return;
    }
    const failure = result.failure ?? (result.exitCode === 0 ? undefined : unknownFailure(result));
    if (!failure) {
      await this.finish(session, "completed", { result });
      return;
    }
    state.last_failure = { kind: failure.kind, message: failure.message };
    if (failure.retryable && state.retries === 0 && !this.stopping) {
      state.retries = 1;
      state.attempt += 1;
      if (failure.retryWithoutLearnings) state.include_learnings = false;
      state.status = "retrying";
      delete state.pid;
      await writeState(this.layout, state);
      const delays = this.options.retryDelayMs ?? { rateLimit: 30_000, other: 5_000 };
      const wait = failure.kind === "rate_limit" ? delays.rateLimit : delays.other;
      await this.audit("retried", {
        dispatch_id: state.id,
        reason: `${failure.kind}: ${failure.message.slice(0, 300)}`,
        detail: { attempt: state.attempt, delay_ms: wait, without_learnings: !state.include_learnings },
      });
      this.log(`retrying ${state.id} in ${Math.round(wait / 1000)} s after ${failure.kind}`);
      session.retryTimer = setTimeout(() => {
        session.retryTimer = undefined;
        if (this.stopping) {
          void this.settle(session, { ...result, cancelled: true });
          return;
        }
        void this.launch(session).catch((error: Error) => {
          void this.finish(session, "failed", {
            failure: {
              kind: "spawn_error",
              retryable: false,
              message: error.message,
              retryWithoutLearnings: false,
            },
          });
        });
      }, wait);
      session.cancelReason = this.stopping ? "shutdown" : session.cancelReason;
      return;
    }
    await this.finish(session, "failed", { result, failure });
  }

  // ---------------------------------------------------------------- output

  /** Ends a session through the completion step, then frees its slot. */
  private async finish(
    session: LiveSession,
    status: CompletionStatus,
    outcome: { result?: AgentRunResult; failure?: AgentFailure },
  ): Promise<void> {
    if (session.finishing) return session.finishing;
    session.finishing = this.finishNow(session, status, outcome);
    return session.finishing;
  }

  private async finishNow(
    session: LiveSession,
    status: CompletionStatus,
    outcome: { result?: AgentRunResult; failure?: AgentFailure },
  ): Promise<void> {
    const { state, dispatch } = session;
    const plan = await planCompletion({
      layout: this.layout,
      state,
      dispatch,
      status,
      outcome,
      finishedAt: this.now(),
      sessionTimeoutSeconds: this.settings.session_timeout_seconds,
    });
    await carryOutCompletion(this.completionContext(), state, dispatch, plan, false);
    this.queue.releaseSlot(state.id);
    this.sessions.delete(state.id);
    this.pump();
    if (this.stopping) this.maybeStopped();
  }

  // ---------------------------------------------------------------- files

  /** Brings the project's learnings into the OpenClaw memory, so the other runtime knows them too. */
  private async shareLearnings(dispatchId: string, project: string): Promise<void> {
    const configured = this.options.openclawWorkspace;
    const workspace = configured === undefined ? resolveOpenClawWorkspace(process.env) : configured;
    if (workspace === false || !existsSync(workspace)) return;
    try {
      const report = await syncProject({ root: this.layout.root, workspace, project });
      await this.audit("learnings_recorded", {
        dispatch_id: dispatchId,
        detail: { project, memory_file: report.memoryFile, exported: report.exported },
      });
    } catch (error) {
      this.log(`could not share learnings of ${project} with OpenClaw memory: ${(error as Error).message}`);
    }
  }

  private async audit(
    event: AuditEventName,
    fields: { dispatch_id?: string; pid?: number; reason?: string; detail?: Record<string, unknown> } = {},
  ): Promise<void> {
    const entry: AuditEvent = {
      ts: this.now().toISOString(),
      event,
      ...fields,
      ...(fields.reason ? { reason: fields.reason.slice(0, 1500) } : {}),
    };
    if (fields.pid === undefined) entry.pid = process.pid;
    await appendJsonLines(this.layout.dispatch.audit, [entry]).catch((error: Error) =>
      this.log(`could not write the audit log: ${error.message}`),
    );
  }

  private async writeHeartbeat(): Promise<void> {
    const heartbeat = {
      ts: this.now().toISOString(),
      active: this.activeCount(),
      queued: this.queue.length,
      pid: process.pid,
      started_at: this.startedAt.toISOString(),
      mode: this.mode,
      max_concurrent: this.settings.max_concurrent,
      interval_seconds: this.settings.heartbeat_seconds,
      ...(this.delivery ? { delivery: this.delivery.status() } : {}),
    };
    await writeFileAtomic(this.layout.dispatch.heartbeat, `${JSON.stringify(heartbeat)}\n`).catch(
      () => undefined,
    );
  }

  // ---------------------------------------------------------------- shutdown

  private stopWaiters: Array<() => void> = [];
  /** Ends the grace period of a stop in progress at once. */
  private cutGrace?: (() => void) | undefined;

  private maybeStopped(): void {
    if (this.activeCount() === 0) for (const resolve of this.stopWaiters.splice(0)) resolve();
  }

  /**
   * Stops gracefully: no new work, running sessions get `shutdown_grace_seconds` to finish,
   * then they are cancelled and queued again for the next start; state is saved.
   */
  async stop(graceMs = this.settings.shutdown_grace_seconds * 1000): Promise<void> {
    if (this.stopping) {
      // A second stop without grace (a second SIGTERM) cuts the grace period short.
      if (graceMs === 0) this.cutGrace?.();
      return this.stopped;
    }
    this.stopping = true;
    await this.audit("daemon_stopping", {
      detail: { active: this.activeCount(), queued: this.queue.length },
    });
    this.log(`stopping: ${this.activeCount()} running, ${this.queue.length} queued`);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    await this.watcher?.close();
    await this.intakeChain;
    for (const session of this.sessions.values()) {
      if (session.retryTimer) {
        clearTimeout(session.retryTimer);
        session.retryTimer = undefined;
        this.queue.releaseSlot(session.state.id);
        session.state.status = "queued";
        await writeState(this.layout, session.state);
        this.queue.putFirst(session.state.id);
      }
    }
    if (this.activeCount() > 0) {
      const allDone = new Promise<void>((resolve) => this.stopWaiters.push(resolve));
      let graceTimer: NodeJS.Timeout | undefined;
      const timer = new Promise<"late">((resolve) => {
        graceTimer = setTimeout(() => resolve("late"), graceMs);
        this.cutGrace = () => resolve("late");
      });
      const ended = await Promise.race([allDone, timer]);
      clearTimeout(graceTimer);
      this.cutGrace = undefined;
      if (ended === "late") {
        this.log("grace period over: cancelling running sessions (they start again next time)");
        const running = [...this.sessions.values()].filter((session) => session.agent);
        for (const session of running) {
          session.cancelReason = "shutdown";
          session.agent?.cancel("daemon stopping");
        }
        await Promise.all(running.map((session) => session.agent?.done));
        await sleep(50);
        await this.waitForSettled();
      }
    }
    await this.queue.save();
    await this.delivery.stop(2000);
    await this.writeHeartbeat();
    await this.audit("daemon_stopped");
    await this.releaseLock();
    this.log("stopped");
    this.resolveStopped();
  }

  private async waitForSettled(): Promise<void> {
    for (let waited = 0; waited < 10_000; waited += 50) {
      if (this.queue.active === 0) return;
      await sleep(50);
    }
  }
}

function unknownFailure(result: AgentRunResult): AgentFailure {
  return {
    kind: "unknown",
    retryable: false,
    message: `the agent exited with ${result.signal ? `signal ${result.signal}` : `code ${result.exitCode}`}`,
    retryWithoutLearnings: false,
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

function duplicateRefusal(id: string): Refusal {
  return {
    rule: "duplicate",
    reason: `a dispatch with id ${id} was already taken`,
    event: "rejected",
    id,
  };
}

/**
 * How many dispatches may wait, when the settings cap the queue. They do not today
 * (`max_concurrent` caps running ones only), so nothing is refused as `queue_full`.
 */
function queueCap(_settings: DispatchSettings): number | undefined {
  return undefined;
}

/** The terminal status in a completion JSON; undefined when there is none, `{}` when unreadable. */
async function readCompletionStatus(path: string): Promise<{ status?: CompletionStatus } | undefined> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return undefined;
  }
  try {
    const status = (JSON.parse(text) as { status?: unknown }).status;
    return typeof status === "string" ? { status: status as CompletionStatus } : {};
  } catch {
    return {};
  }
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
