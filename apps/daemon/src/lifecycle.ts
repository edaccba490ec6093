import { chmod, mkdir, open, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { type DispatchSettings, writeFileAtomic } from "@gstack/contracts";
import type { CompletionDelivery } from "@gstack/daemon-client";
import { DaemonError, loadSettings, releaseDaemonLock, takeDaemonLock } from "@gstack/daemon-client";
import type { DaemonContext } from "./daemon-context";
import { isDiskFull } from "./disk-space";
import { checkEnvironment } from "./environment";

/** What the lifecycle starts, wakes and stops. */
export interface LifecycleParts {
  context: DaemonContext;
  /** Settings that override config.yaml. */
  settings?: Partial<DispatchSettings>;
  /** The Claude Code binary, when not the configured one or `claude` on PATH. */
  claudeBinary?: string;
  /** Makes the delivery, once the environment is checked. */
  makeDelivery(): CompletionDelivery;
  /** Start-up reconciliation (see `recovery.ts`), before anything new is taken. */
  recover(): Promise<void>;
  /**
   * Start-up work that runs beside new work once the doors are open (landings cut short being
   * finished); a stop waits for it, up to the grace, before it lets go of the lock.
   */
  background?(): Promise<void>;
  /** The doors: opened last at start, rescanned on each heartbeat, closed first at stop. */
  doors: { open(): Promise<void>; rescan(): Promise<void>; close(): Promise<void> };
  sessions: {
    readonly active: number;
    readonly queued: number;
    pump(): void;
    /** Sessions waiting to retry go back in the line. */
    holdRetries(): Promise<void>;
    /** Cancels running agents (queued again for the next start) and waits for their slots. */
    interruptRunning(): Promise<void>;
    saveQueue(): Promise<void>;
  };
}

/**
 * Start, heartbeat and stop. Start: settings, folders, the single-instance lock, the
 * environment, the delivery, recovery, then the doors open. Every `heartbeat_seconds`: the
 * heartbeat file, a rescan of `dispatch/` and a delivery replay. Stop: no new work, running
 * sessions get `shutdown_grace_seconds` to finish (a second stop without grace cuts it short),
 * then they are cancelled and queued again; state saved, lock released.
 */
export class Lifecycle {
  /** Resolves when the daemon has stopped. */
  readonly stopped: Promise<void>;
  private resolveStopped!: () => void;
  private startedAt: Date;
  private lockHeld = false;
  private running = false;
  private starting?: Promise<void>;
  private heartbeatTimer?: NodeJS.Timeout;
  private stopWaiters: Array<() => void> = [];
  /** Ends the grace period of a stop in progress at once. */
  private cutGrace?: (() => void) | undefined;
  /** A stop without grace came while stopping (a second SIGTERM), before or during the grace. */
  private graceCut = false;
  /** The start-up work running beside new work, while it runs. */
  private background?: Promise<void>;

  constructor(private readonly parts: LifecycleParts) {
    this.startedAt = parts.context.now();
    this.stopped = new Promise((resolve) => {
      this.resolveStopped = resolve;
    });
  }

  /** True once start has finished and until stop begins. */
  get started(): boolean {
    return this.running;
  }

  /** Local-only mode: no Clawvisor URL, so completions stay on disk. */
  get mode(): "local-only" | "clawvisor" {
    return this.parts.context.settings.clawvisor_url ? "clawvisor" : "local-only";
  }

  /** Throws a {@link DaemonError} with one readable sentence on any problem. */
  start(): Promise<void> {
    this.starting ??= this.startNow();
    return this.starting;
  }

  private async startNow(): Promise<void> {
    const { context } = this.parts;
    const loaded = await loadSettings(context.layout).catch((error: Error) => {
      throw new DaemonError(error.message, { cause: error });
    });
    context.settings = { ...loaded.settings, ...this.parts.settings } as DispatchSettings;
    for (const warning of loaded.warnings) context.log(`warning: ${warning}`);
    const overrides = this.parts.settings;
    // The list last read, with the identity of the file it came from: a launch reads the file
    // again only when that changed (another inode, size, or change time to the nanosecond).
    let lastRead: { identity: string; repos: readonly string[] } | undefined;
    context.currentTrustedRepos = async () => {
      if (overrides?.trusted_repos) return overrides.trusted_repos;
      // An edit of config.yaml takes effect at the next launch. One that cannot be read (a save
      // under way, a mistake) leaves the list the daemon started with, and says so.
      try {
        const identity = await fileIdentity(context.layout.config);
        if (lastRead?.identity === identity) return lastRead.repos;
        const repos = (await loadSettings(context.layout)).settings.trusted_repos;
        lastRead = { identity, repos };
        return repos;
      } catch (error) {
        context.log(`warning: ${(error as Error).message.split("\n")[0]}; using trusted_repos as at start`);
        return context.settings.trusted_repos;
      }
    };
    const folders = context.layout.dispatch;
    for (const folder of [
      folders.incoming,
      folders.tmp,
      folders.claimed,
      folders.sessions,
      folders.completed,
      folders.rejected,
      folders.control,
    ]) {
      // Private to the user whatever the umask, and made so when an older start left them open.
      await unwritable(folder, async () => {
        await mkdir(folder, { recursive: true, mode: 0o700 });
        await chmod(folder, 0o700);
      });
    }
    // The audit log is appended to by several writers; it is created private once, here.
    await unwritable(folders.audit, async () => {
      await (await open(folders.audit, "a", 0o600)).close();
      await chmod(folders.audit, 0o600);
    });
    await takeDaemonLock(context.layout);
    this.lockHeld = true;
    try {
      context.environment = await checkEnvironment({
        layout: context.layout,
        settings: context.settings,
        log: context.log,
        ...(this.parts.claudeBinary ? { claudeBinary: this.parts.claudeBinary } : {}),
      });
      context.delivery = this.parts.makeDelivery();
      try {
        await context.delivery.start();
      } catch (error) {
        context.log(`warning: checking the callback endpoints failed: ${(error as Error).message}`);
      }
      await this.parts.recover();
    } catch (error) {
      await this.releaseLock();
      throw error;
    }
    this.startedAt = context.now();
    const { max_concurrent: maxConcurrent } = context.settings;
    const agents = context.environment.knownAgents;
    await context.audit("daemon_started", {
      detail: { mode: this.mode, max_concurrent: maxConcurrent, agents },
    });
    context.log(
      `gstack-dispatch started (pid ${process.pid}, ${this.mode}, max ${maxConcurrent} at once, agents: ${agents.join(", ")})`,
    );
    context.log(`watching ${folders.incoming}`);
    await this.writeHeartbeat();
    this.heartbeatTimer = setInterval(() => this.beat(), context.settings.heartbeat_seconds * 1000);
    this.running = true;
    await this.parts.doors.open();
    // Callers find the service API through the heartbeat, so it says where it listens at once.
    if (context.api) await this.writeHeartbeat();
    void this.replayDeliveries();
    this.parts.sessions.pump();
    this.background = this.parts
      .background?.()
      .catch((error: Error) => context.log(`start-up work beside the doors failed: ${error.message}`));
  }

  /** One heartbeat: the file, a rescan of `dispatch/`, a delivery replay. */
  private beat(): void {
    const { context, doors } = this.parts;
    void this.writeHeartbeat();
    // Names the watcher did not report (dropped again within its blind window, or not
    // claimable before) are picked up here, at most one interval late.
    if (!context.stopping) {
      void doors.rescan().catch((error: Error) => context.log(`scan of dispatch/ failed: ${error.message}`));
    }
    void this.replayDeliveries();
  }

  private async replayDeliveries(): Promise<void> {
    const { context } = this.parts;
    if (context.stopping) return;
    await context.delivery.replay().catch((error: Error) => context.log(`delivery replay: ${error.message}`));
  }

  /** Writes `dispatch/.daemon-heartbeat`; a failure is ignored (the next beat tries again). */
  async writeHeartbeat(): Promise<void> {
    const { context, sessions } = this.parts;
    const heartbeat = {
      ts: context.now().toISOString(),
      active: sessions.active,
      queued: sessions.queued,
      pid: process.pid,
      started_at: this.startedAt.toISOString(),
      mode: this.mode,
      max_concurrent: context.settings.max_concurrent,
      interval_seconds: context.settings.heartbeat_seconds,
      ...(context.delivery ? { delivery: context.delivery.status() } : {}),
      ...(context.api ? { api: context.api } : {}),
      ...(context.disk?.full
        ? { disk_full: { since: context.disk.full.since.toISOString(), queued: sessions.queued } }
        : {}),
    };
    const text = `${JSON.stringify(heartbeat)}\n`;
    await writeFileAtomic(context.layout.dispatch.heartbeat, text, { mode: 0o600 }).catch((error) =>
      // With the disk full a new file cannot be made, but the old one can be overwritten in
      // place, so status still sees a live daemon and why nothing moves.
      isDiskFull(error) ? overwriteInPlace(context.layout.dispatch.heartbeat, text) : undefined,
    );
  }

  /** Told when a session leaves; a stop waiting for running sessions ends once none is left. */
  sessionLeft(): void {
    if (this.parts.sessions.active === 0) for (const resolve of this.stopWaiters.splice(0)) resolve();
  }

  /**
   * Stops gracefully: no new work, running sessions get `graceMs` (default
   * `shutdown_grace_seconds`) to finish, then they are cancelled and queued again for the next
   * start; state is saved. A second call with `graceMs` 0 (a second SIGTERM) ends the grace at once.
   */
  async stop(graceMs?: number): Promise<void> {
    const { context, sessions, doors } = this.parts;
    if (context.stopping) {
      if (graceMs === 0) {
        // Remembered too, for a second stop that comes before the grace has begun.
        this.graceCut = true;
        this.cutGrace?.();
      }
      return this.stopped;
    }
    context.stopping = true;
    // A stop during the start waits for it: the doors then take nothing and nothing is launched.
    await this.starting?.catch(() => undefined);
    if (!this.running) {
      // Never started (or start failed): nothing runs and no lock is held.
      await this.releaseLock();
      this.resolveStopped();
      return;
    }
    this.running = false;
    const grace = graceMs ?? context.settings.shutdown_grace_seconds * 1000;
    await context.audit("daemon_stopping", { detail: { active: sessions.active, queued: sessions.queued } });
    context.log(`stopping: ${sessions.active} running, ${sessions.queued} queued`);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    await doors.close();
    await sessions.holdRetries();
    if (sessions.active > 0) {
      const allDone = new Promise<void>((resolve) => this.stopWaiters.push(resolve));
      let graceTimer: NodeJS.Timeout | undefined;
      const timer = new Promise<"late">((resolve) => {
        graceTimer = setTimeout(() => resolve("late"), grace);
        this.cutGrace = () => resolve("late");
        if (this.graceCut) resolve("late");
      });
      context.log(`grace: waiting up to ${Math.round(grace / 1000)} s for ${sessions.active} running`);
      const ended = await Promise.race([allDone, timer]);
      clearTimeout(graceTimer);
      this.cutGrace = undefined;
      if (ended === "late") {
        context.log("grace period over: cancelling running sessions (they start again next time)");
        await sessions.interruptRunning();
      }
    }
    await sessions.saveQueue();
    if (this.background) {
      // Landings being finished: each is safe to cut (the next start finishes it), but one
      // nearly done is better let finish.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.background,
        new Promise((resolve) => {
          timer = setTimeout(resolve, graceMs === 0 ? 0 : grace);
        }),
      ]);
      clearTimeout(timer);
    }
    await context.delivery.stop(2000);
    await this.writeHeartbeat();
    await context.audit("daemon_stopped");
    context.disk?.stop();
    await this.releaseLock();
    context.log("stopped");
    this.resolveStopped();
  }

  private async releaseLock(): Promise<void> {
    if (!this.lockHeld) return;
    this.lockHeld = false;
    await releaseDaemonLock(this.parts.context.layout);
  }
}

/** Rewrites a file's bytes in place (no new file, no new blocks when it does not grow). */
async function overwriteInPlace(path: string, text: string): Promise<void> {
  let handle: Awaited<ReturnType<typeof open>> | undefined;
  try {
    handle = await open(path, "r+");
    const bytes = Buffer.from(text);
    await handle.write(bytes, 0, bytes.length, 0);
    await handle.truncate(bytes.length);
  } catch {
    // The next beat tries again.
  } finally {
    await handle?.close();
  }
}

/** What changes whenever a file is replaced or written: its device and inode, size and times. */
async function fileIdentity(path: string): Promise<string> {
  try {
    const info = await stat(path, { bigint: true });
    return `${info.dev}:${info.ino}:${info.size}:${info.mtimeNs}:${info.ctimeNs}`;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return "absent";
    throw error;
  }
}

/**
 * Runs a step that makes `path` (a folder or file of the state root) and makes it private; when
 * the state root refuses it (not the user's, read-only, a read-only file system) the error says
 * which folder and what to do, instead of a bare "EPERM … chmod".
 */
async function unwritable(path: string, step: () => Promise<void>): Promise<void> {
  try {
    await step();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EPERM" && code !== "EACCES" && code !== "EROFS") throw error;
    const owner = await firstExisting(path);
    const at = owner?.path ?? path;
    const foreign = owner !== undefined && owner.uid !== process.getuid?.();
    const why =
      code === "EROFS"
        ? "it is on a read-only file system"
        : foreign
          ? `${at} belongs to uid ${owner.uid}, not to you (uid ${process.getuid?.()})`
          : `${at} is not writable by you`;
    const fix =
      code === "EROFS"
        ? "mount it writable"
        : foreign
          ? `make it yours (sudo chown -R "$(id -u)" ${at})`
          : `make it writable (chmod u+rwx ${at})`;
    throw new DaemonError(
      `cannot prepare ${path} (${code}): ${why}; the daemon makes its folders and files there and keeps them private (0700 and 0600): ${fix}, or use another state root (--root or GSTACK_HOME)`,
    );
  }
}

/** `path` or its nearest folder that exists, with its owner. */
async function firstExisting(path: string): Promise<{ path: string; uid: number } | undefined> {
  for (let at = path; ; at = dirname(at)) {
    const info = await stat(at).catch(() => undefined);
    if (info) return { path: at, uid: info.uid };
    if (dirname(at) === at) return undefined;
  }
}
