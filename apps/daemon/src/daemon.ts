import { type DispatchSettings, type GstackLayout, gstackLayout } from "@gstack/contracts";
import type { AgentStarter, CompletionDelivery, DeliveryContext } from "@gstack/daemon-client";
import { auditLog, type DaemonContext } from "./daemon-context";
import { createCompletionDelivery } from "./deliver/outbox-delivery";
import type { RetrySchedule } from "./deliver/retry-schedule";
import { DiskSpace } from "./disk-space";
import { type CancelOutcome, SessionRunner } from "./dispatch/session-runner";
import type { CompletionStepContext, CompletionStepName } from "./finish/completion";
import { learningsSharer } from "./finish/learnings";
import { MAX_DISPATCH_BYTES } from "./intake/intake";
import { Intake, type OfferVerdict } from "./intake/intake-doors";
import { finishCutLandings, pruneWorktrees } from "./land/awaiting";
import { Lifecycle } from "./lifecycle";
import { recover } from "./recovery";
import { type CancelParts, onControlFile, requestCancel, scanControl } from "./run/cancel";
import { startRunnerAgent } from "./run/runner-agent";
import { daemonBackend } from "./service-api/backend";
import { ServiceApi } from "./service-api/server";
import { DAEMON_VERSION } from "./version";

export type { CancelOutcome } from "./dispatch/session-runner";
export type { OfferVerdict } from "./intake/intake-doors";

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
  /** Monotonic clock in milliseconds (default `performance.now`), for tests of a moved wall clock. */
  monotonicMs?: () => number;
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
  /**
   * The local service API (see `service-api/`): on by default, on `dispatch/.api.sock`, plus TCP
   * when `api_port` is set. `false` turns it off; the fields override the socket path or port.
   */
  serviceApi?: false | { socketPath?: string; tcpPort?: number };
  /** Called before each step of finishing a dispatch; tests crash the daemon here on purpose. */
  beforeCompletionStep?: (step: CompletionStepName, id: string) => void | Promise<void>;
}

/**
 * The dispatch daemon: takes dispatches (files in `dispatch/`, or {@link Daemon.offer}), queues
 * them, runs coding agents, writes completion reports, activity and learnings, and delivers the
 * completions. Every state change is on disk before it matters, so a restart resumes where it
 * stopped. This class only puts the rooms together; each stage lives in its own file (see the
 * README's table).
 */
export class Daemon {
  readonly layout: GstackLayout;
  /** Resolves when the daemon has stopped. */
  readonly stopped: Promise<void>;
  private readonly context: DaemonContext;
  private readonly runner: SessionRunner;
  private readonly intake: Intake;
  private readonly lifecycle: Lifecycle;
  private readonly cancels: CancelParts;
  private api?: ServiceApi;

  constructor(options: DaemonOptions) {
    this.layout = gstackLayout(options.root);
    const log = options.log ?? (() => {});
    const now = options.now ?? (() => new Date());
    // settings, environment and delivery are filled in by the start.
    const context = {
      layout: this.layout,
      now,
      log,
      audit: auditLog(this.layout, now, log),
      ...(options.monotonicMs ? { monotonicMs: options.monotonicMs } : {}),
      stopping: false,
    } as DaemonContext;
    this.context = context;
    context.disk = new DiskSpace({
      probePath: `${this.layout.dispatch.incoming}/.space-probe`,
      now,
      log,
      onRoom: () => {
        this.runner.pump();
        void this.lifecycle.writeHeartbeat();
      },
    });
    const completion = (): CompletionStepContext => ({
      layout: this.layout,
      delivery: context.delivery,
      audit: context.audit,
      log,
      shareLearnings: learningsSharer({
        root: this.layout.root,
        workspace: options.openclawWorkspace,
        audit: context.audit,
        log,
      }),
      ...(options.beforeCompletionStep ? { beforeStep: options.beforeCompletionStep } : {}),
    });
    this.runner = new SessionRunner(context, {
      startAgent: options.startAgent ?? startRunnerAgent,
      ...(options.agentEnv ? { agentEnv: options.agentEnv } : {}),
      ...(options.retryDelayMs ? { retryDelayMs: options.retryDelayMs } : {}),
      completion,
      onSessionLeft: () => this.lifecycle.sessionLeft(),
    });
    const runner = this.runner;
    this.intake = new Intake(context, {
      sessions: runner,
      ...(options.maxDispatchBytes !== undefined ? { maxDispatchBytes: options.maxDispatchBytes } : {}),
      onControl: (path, name) => void onControlFile(this.cancels, path, name),
      rescanControl: () => scanControl(this.cancels),
    });
    const intake = this.intake;
    this.cancels = { context, sessions: runner, intake };
    this.lifecycle = new Lifecycle({
      context,
      ...(options.settings ? { settings: options.settings } : {}),
      ...(options.claudeBinary ? { claudeBinary: options.claudeBinary } : {}),
      makeDelivery: () => {
        const deliveryContext: DeliveryContext = {
          audit: (event, fields) => context.audit(event, fields),
          log,
        };
        if (options.delivery) return options.delivery(deliveryContext);
        return createCompletionDelivery({
          layout: this.layout,
          settings: context.settings,
          context: deliveryContext,
          now,
          ...(options.monotonicMs ? { monotonicMs: options.monotonicMs } : {}),
          ...(options.deliverySchedule ? { schedule: options.deliverySchedule } : {}),
        });
      },
      recover: async () => {
        await recover({
          context,
          completion: completion(),
          ...(options.maxDispatchBytes !== undefined ? { maxDispatchBytes: options.maxDispatchBytes } : {}),
          adopt: (state, dispatch, exited) => runner.adopt(state, dispatch, exited),
          adoptWaiting: (state, dispatch) => void runner.adoptWaiting(state, dispatch),
          adopted: (id) => runner.has(id),
          takeClaimed: (path, name, firstSeen, settled) => intake.takeClaimed(path, name, firstSeen, settled),
          saveQueue: () => runner.queue.save(),
        });
        await pruneWorktrees(context.layout, {
          now: context.now(),
          trustedRepos: () =>
            context.currentTrustedRepos
              ? context.currentTrustedRepos()
              : Promise.resolve(context.settings.trusted_repos),
          ...(context.settings.worktree_retention_days !== undefined
            ? { retentionDays: context.settings.worktree_retention_days }
            : {}),
          log: (line) => context.log(line),
        });
      },
      background: () =>
        finishCutLandings(context.layout, {
          now: () => context.now(),
          trustedRepos: () =>
            context.currentTrustedRepos
              ? context.currentTrustedRepos()
              : Promise.resolve(context.settings.trusted_repos),
          audit: context.audit,
          log: (line) => context.log(line),
        }),
      doors: {
        open: async () => {
          await intake.open();
          await scanControl(this.cancels);
          if (options.serviceApi !== false) await this.openServiceApi(options);
        },
        rescan: async () => {
          await intake.scanIncoming();
          await scanControl(this.cancels);
        },
        close: async () => {
          await this.api?.close();
          await intake.close();
        },
      },
      sessions: {
        get active() {
          return runner.active;
        },
        get queued() {
          return runner.queue.length;
        },
        pump: () => runner.pump(),
        holdRetries: () => runner.holdRetries(),
        interruptRunning: () => runner.interruptRunning(),
        saveQueue: () => runner.queue.save(),
      },
    });
    this.stopped = this.lifecycle.stopped;
  }

  /**
   * Opens the service API. A failure to listen is logged and shown in the heartbeat; the
   * daemon keeps taking dispatch files without it.
   */
  private async openServiceApi(options: DaemonOptions): Promise<void> {
    const { context } = this;
    const overrides = options.serviceApi || {};
    const tcpPort = overrides.tcpPort ?? context.settings.api_port;
    const api = new ServiceApi({
      layout: this.layout,
      log: context.log,
      maxBodyBytes: 2 * (options.maxDispatchBytes ?? MAX_DISPATCH_BYTES) + 64 * 1024,
      ...(overrides.socketPath ? { socketPath: overrides.socketPath } : {}),
      ...(tcpPort !== undefined ? { tcpPort } : {}),
      ...(context.settings.api_host ? { tcpHost: context.settings.api_host } : {}),
      backend: daemonBackend({
        context,
        runner: this.runner,
        intake: this.intake,
        offer: (text, source) => this.offer(text, { source, maxQueued: context.settings.max_queued }),
        cancel: (id, reason) => this.requestCancel(id, reason),
        mode: () => this.lifecycle.mode,
        version: DAEMON_VERSION,
      }),
    });
    this.api = api;
    try {
      await api.listen();
      context.api = {
        ...(api.socket ? { socket: api.socket } : {}),
        ...(api.tcpAddress ? { tcp: api.tcpAddress } : {}),
      };
      context.log(`service API on ${[api.socket, api.tcpAddress].filter(Boolean).join(" and ")}`);
    } catch (error) {
      context.api = {
        ...(api.socket ? { socket: api.socket } : {}),
        error: (error as Error).message,
      };
      context.log(`warning: ${(error as Error).message}`);
    }
  }

  /** The TCP address of the service API, when it serves TCP. */
  get serviceApiTcp(): string | undefined {
    return this.api?.tcpAddress;
  }

  /** The settings in force (config.yaml and the options' overrides); read once started. */
  get settings(): DispatchSettings {
    return this.context.settings;
  }

  /** Local-only mode: no Clawvisor URL, so completions stay on disk. */
  get mode(): "local-only" | "clawvisor" {
    return this.lifecycle.mode;
  }

  /** Ids of running and queued dispatches, for tests and status. */
  snapshot(): { running: string[]; queued: string[] } {
    return this.runner.snapshot();
  }

  /**
   * Checks the environment, takes the single-instance lock, recovers unfinished work, then
   * starts watching. Throws a {@link DaemonError} with one readable sentence on any problem.
   */
  start(): Promise<void> {
    return this.lifecycle.start();
  }

  /**
   * Stops gracefully: no new work, running sessions get `shutdown_grace_seconds` to finish,
   * then they are cancelled and queued again for the next start; state is saved. A second
   * stop with `graceMs` 0 (a second SIGTERM) cancels them at once.
   */
  stop(graceMs?: number): Promise<void> {
    return this.lifecycle.stop(graceMs);
  }

  /** Waits until every file seen and offer made so far has been taken or refused. */
  async idle(): Promise<void> {
    await this.intake.idle();
    await this.runner.queue.settled();
  }

  /**
   * The in-process door next to `dispatch/`: the same checks as a dropped file, the same
   * exactly-once rule by id, and on acceptance the same durability (`claimed/{id}.json`, state,
   * queue, audit), so once this resolves accepted a crash loses nothing: the next start runs it.
   * `source` names who offered it, for the audit log. A refusal is audited; no file is kept.
   * With `maxQueued`, an offer that would make more than that many dispatches wait is refused
   * as `queue_full` (the service API's limit; dropped files are never refused for it).
   */
  async offer(text: string, options: { source: string; maxQueued?: number }): Promise<OfferVerdict> {
    if (!this.lifecycle.started && !this.context.stopping) {
      return this.intake.refuseOffer(options.source, {
        rule: "not_started",
        reason: "the daemon has not started; call start() first",
        event: "rejected",
      });
    }
    return this.intake.offer(
      text,
      options.source,
      options.maxQueued !== undefined ? { maxQueued: options.maxQueued } : {},
    );
  }

  /**
   * The one place a cancel is decided (`control/{id}.cancel` comes here too): see
   * {@link CancelOutcome} for what each answer means.
   */
  requestCancel(id: string, reason: string): Promise<CancelOutcome> {
    return requestCancel(this.cancels, id, reason);
  }

  /**
   * Cancels a queued or running dispatch. Returns false when the id is unknown.
   * @deprecated Use {@link Daemon.requestCancel}, which says what the cancel did.
   */
  async cancel(id: string, reason: string): Promise<boolean> {
    const { outcome } = await this.requestCancel(id, reason);
    return outcome === "cancelling" || outcome === "cancelled";
  }
}
