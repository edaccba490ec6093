import { readFile, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { writeJsonAtomic } from "../atomic-json";
import type { ContractorSettings } from "./contractor-settings";
import {
  createSidecarHandler,
  SIDECAR_HEADER,
  type SidecarHandler,
  type SidecarLog,
  type SidecarServerOptions,
} from "./sidecar-server";

/** A sidecar this process serves. */
export interface RunningSidecar {
  url: string;
  port: number;
  handler: SidecarHandler;
}

/** What starting the sidecar came to. */
export type SidecarStart =
  | { kind: "started"; sidecar: RunningSidecar }
  /** This process serves it already (a plugin reload): the running one is shared. */
  | { kind: "shared"; sidecar: RunningSidecar }
  /** Another process (a second gateway) serves the port. */
  | { kind: "elsewhere"; pid?: number; port: number }
  | { kind: "failed"; reason: string };

interface Entry {
  server: Server;
  sidecar: RunningSidecar;
  users: number;
  lockFile: string;
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

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
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
  options: Omit<SidecarServerOptions, "settings"> & { settings?: never },
): Promise<SidecarStart> {
  const log: SidecarLog = options.log;
  const known = registry().get(settings.port);
  if (known) {
    known.users += 1;
    return { kind: "shared", sidecar: known.sidecar };
  }
  if (!settings.projectDir) return { kind: "failed", reason: "contractor.projectDir is not set" };
  const handler = createSidecarHandler({
    ...options,
    settings: { ...settings, projectDir: settings.projectDir },
  });
  const server = createServer((request, response) => handler.handle(request, response));
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
  const sidecar: RunningSidecar = {
    url: `http://${settings.host}:${settings.port}/v1`,
    port: settings.port,
    handler,
  };
  registry().set(settings.port, { server, sidecar, users: 1, lockFile: settings.lockFile });
  await writeJsonAtomic(settings.lockFile, {
    pid: process.pid,
    port: settings.port,
    startedAt: new Date().toISOString(),
  });
  return { kind: "started", sidecar };
}

/**
 * Releases one use of the sidecar on `port`; the last one stops every running turn, closes the
 * server and removes the lock file (when it still names this process).
 */
export async function releaseSidecar(port: number): Promise<void> {
  const entry = registry().get(port);
  if (!entry) return;
  entry.users -= 1;
  if (entry.users > 0) return;
  registry().delete(port);
  await entry.sidecar.handler.stopAll("the gateway is stopping");
  await new Promise<void>((resolve) => {
    entry.server.close(() => resolve());
    entry.server.closeAllConnections();
  });
  const holder = await lockHolder(entry.lockFile);
  if (holder?.pid === process.pid) await rm(entry.lockFile, { force: true });
}
