import { readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { processAlive } from "@gstack/contracts";
import { writeJsonAtomic } from "../atomic-json";
import type { ContractorSettings } from "./contractor-settings";
import {
  createSidecarHandler,
  SIDECAR_HEADER,
  type SidecarHandler,
  type SidecarLog,
  type SidecarServerOptions,
} from "./sidecar-server";
import { TurnLocks } from "./turn-locks";

/** A sidecar this process serves. */
export interface RunningSidecar {
  url: string;
  port: number;
  /** The handler new requests go to (a settings reload replaces it). */
  handler: SidecarHandler;
}

/** What starting the sidecar came to. */
export type SidecarStart =
  | { kind: "started"; sidecar: RunningSidecar }
  /** This process serves it already (a plugin reload): the running one is shared. */
  | { kind: "shared"; sidecar: RunningSidecar }
  /**
   * A settings reload stopped the service while turns ran: the server stayed up for them, and
   * now serves new turns with the new settings while those finish with the old.
   */
  | { kind: "reloaded"; sidecar: RunningSidecar }
  /** Another process (a second gateway) serves the port. */
  | { kind: "elsewhere"; pid?: number; port: number }
  | { kind: "failed"; reason: string };

interface Entry {
  server: Server;
  sidecar: RunningSidecar;
  users: number;
  lockFile: string;
  /** Handlers a reload replaced, finishing the turns they were running. */
  retired: SidecarHandler[];
  /** Released by every user while turns ran: closes once they are done, unless a start takes it over. */
  draining?: { stopOnExit: () => void };
}

/**
 * Sidecars live in a registry on `globalThis`, keyed by port: a hot reload loads the plugin's
 * module again, and the new copy must find the server the old one started instead of binding
 * the port a second time.
 */
const registryKey = Symbol.for("gstack.openclaw-plugin.contractor-sidecars");
function registry(): Map<number, Entry> {
  const holder = globalThis as { [registryKey]?: Map<number, Entry> };
  holder[registryKey] ??= new Map();
  return holder[registryKey];
}

async function lockHolder(lockFile: string): Promise<{ pid: number; port: number } | undefined> {
  try {
    const lock = JSON.parse(await readFile(lockFile, "utf8")) as { pid?: unknown; port?: unknown };
    if (typeof lock.pid === "number" && typeof lock.port === "number")
      return { pid: lock.pid, port: lock.port };
  } catch {
    // No lock, or not ours to read.
  }
  return undefined;
}

/** The process id a contractor sidecar on the port names in its answers, if one answers. */
async function sidecarOnPort(host: string, port: number): Promise<number | undefined> {
  try {
    const response = await fetch(`http://${host}:${port}/v1/models`, { signal: AbortSignal.timeout(3_000) });
    await response.arrayBuffer();
    const pid = Number(response.headers.get(SIDECAR_HEADER));
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts the sidecar once per gateway. The port itself is the lock between processes: the
 * first to bind it serves, a second gateway finds it taken and leaves it to the sidecar that
 * answers there (or the live process its lock file names). Within one process the running server is shared and counted, so a reload
 * that starts the service again (before or after stopping the old one) never binds twice.
 */
export async function startSidecarOnce(
  settings: ContractorSettings,
  options: Omit<SidecarServerOptions, "settings" | "locks"> & { settings?: never },
): Promise<SidecarStart> {
  const log: SidecarLog = options.log;
  const known = registry().get(settings.port);
  if (known && !known.draining) {
    known.users += 1;
    return { kind: "shared", sidecar: known.sidecar };
  }
  if (!settings.projectDir) return { kind: "failed", reason: "contractor.projectDir is not set" };
  if (known?.draining) {
    // The turns that ran through the reload keep their handler; new turns get the new settings.
    process.off("exit", known.draining.stopOnExit);
    known.draining = undefined;
    known.users = 1;
    // The old handler's kept processes go (a running turn's once it ends): new turns start their own.
    await known.sidecar.handler.retire();
    known.retired = [...known.retired, known.sidecar.handler].filter(
      (handler) => handler.busySessions().length > 0,
    );
    known.sidecar.handler = createSidecarHandler({
      ...options,
      locks: new TurnLocks(settings.turnLocksDir),
      settings: { ...settings, projectDir: settings.projectDir },
    });
    return { kind: "reloaded", sidecar: known.sidecar };
  }
  // What a gateway killed mid-turn left running: its Claude Code turns are stopped before any new one starts.
  const locks = new TurnLocks(settings.turnLocksDir);
  for (const cleared of await locks.sweep()) {
    const what = cleared.kept ? "the Claude Code process kept for" : "the turn of";
    log.warn(
      `contractor: stopped ${what} ${cleared.sessionKey} left by gateway process ${cleared.holder.pid}${cleared.claude ? ` (Claude Code process ${cleared.claude.pid})` : ""}`,
    );
  }
  const handler = createSidecarHandler({
    ...options,
    locks,
    settings: { ...settings, projectDir: settings.projectDir },
  });
  const sidecar: RunningSidecar = {
    url: `http://${settings.host}:${settings.port}/v1`,
    port: settings.port,
    handler,
  };
  const server = createServer((request, response) => sidecar.handler.handle(request, response));
  server.headersTimeout = 60_000;
  server.requestTimeout = 0;
  const bound = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    server.once("error", (error: NodeJS.ErrnoException) => resolve(error));
    server.listen(settings.port, settings.host, () => resolve(undefined));
  });
  if (bound) {
    if (bound.code === "EADDRINUSE") {
      // Another OpenClaw home on this machine keeps its lock file elsewhere: ask the port itself.
      const serving = await sidecarOnPort(settings.host, settings.port);
      if (serving !== undefined) return { kind: "elsewhere", pid: serving, port: settings.port };
      const holder = await lockHolder(settings.lockFile);
      if (holder && holder.port === settings.port && processAlive(holder.pid)) {
        return { kind: "elsewhere", pid: holder.pid, port: settings.port };
      }
      return {
        kind: "failed",
        reason: `port ${settings.port} on ${settings.host} is taken by another program (set contractor.port)`,
      };
    }
    return { kind: "failed", reason: bound.message };
  }
  // Raced with another start in this process while binding: keep theirs.
  const raced = registry().get(settings.port);
  if (raced) {
    server.close();
    raced.users += 1;
    return { kind: "shared", sidecar: raced.sidecar };
  }
  server.on("error", (error) => log.warn(`contractor: sidecar server error: ${error.message}`));
  registry().set(settings.port, { server, sidecar, users: 1, lockFile: settings.lockFile, retired: [] });
  await writeJsonAtomic(settings.lockFile, {
    pid: process.pid,
    port: settings.port,
    startedAt: new Date().toISOString(),
  });
  return { kind: "started", sidecar };
}

/**
 * Releases one use of the sidecar on `port`. When the last one goes, a sidecar with no turn
 * running stops at once: the server closes and the lock file goes (when it still names this
 * process). With turns running (OpenClaw stops the service to reload the plugin after a settings
 * edit, and starts it again right after) the server stays up and the turns finish; a start in
 * the meantime takes the server over, otherwise it closes when they are done. Each turn still
 * ends by its own time limit, and if the process exits first their process groups are stopped.
 */
export async function releaseSidecar(port: number): Promise<void> {
  const entry = registry().get(port);
  if (!entry || entry.draining) return;
  entry.users -= 1;
  if (entry.users > 0) return;
  const handlers = () => [entry.sidecar.handler, ...entry.retired];
  if (handlers().some((handler) => handler.busySessions().length > 0)) {
    const stopOnExit = () => {
      for (const handler of handlers()) {
        for (const pid of handler.claudePids()) {
          try {
            process.kill(-pid, "SIGTERM");
          } catch {
            // Already gone.
          }
        }
      }
    };
    const draining = { stopOnExit };
    entry.draining = draining;
    process.once("exit", stopOnExit);
    void (async () => {
      await Promise.all(handlers().map((handler) => handler.idle()));
      // A start took the server over in the meantime: it is theirs now.
      if (entry.draining !== draining) return;
      process.off("exit", stopOnExit);
      await closeEntry(port, entry);
    })();
    return;
  }
  await closeEntry(port, entry);
}

async function closeEntry(port: number, entry: Entry): Promise<void> {
  if (registry().get(port) === entry) registry().delete(port);
  await Promise.all(
    [entry.sidecar.handler, ...entry.retired].map((handler) => handler.stopAll("the gateway is stopping")),
  );
  await new Promise<void>((resolve) => {
    entry.server.close(() => resolve());
    entry.server.closeAllConnections();
  });
  const holder = await lockHolder(entry.lockFile);
  if (holder?.pid === process.pid) await rm(entry.lockFile, { force: true });
}
