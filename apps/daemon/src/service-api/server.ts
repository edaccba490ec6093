import { randomBytes } from "node:crypto";
import { chmod, lstat, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { type GstackLayout, readSecretFile, writeFileAtomic } from "@gstack/contracts";
import { API_KEYCHAIN_SERVICE, keychainToken } from "../token";
import { type ServiceBackend, serviceHandler } from "./handler";

/** Unix socket paths longer than this cannot be bound on Linux (macOS allows 103). */
const MAX_SOCKET_PATH = process.platform === "darwin" ? 103 : 107;

/** Why the service API could not listen somewhere; the daemon keeps running without it. */
export class ServiceApiError extends Error {}

export interface ServiceApiOptions {
  layout: GstackLayout;
  backend: ServiceBackend;
  log(line: string): void;
  /** Bodies over this are refused with 413. */
  maxBodyBytes: number;
  /** Serve TCP too, on this port (0 picks a free one, for tests). */
  tcpPort?: number;
  /** The TCP address; loopback unless configured otherwise. */
  tcpHost?: string;
  /** Where the Unix socket goes; default `dispatch/.api.sock`. */
  socketPath?: string;
}

/**
 * The daemon's service API: HTTP on a Unix socket that only its user can open (mode 0600), and
 * optionally on a TCP port where every request needs the bearer token in `.api-token`.
 */
export class ServiceApi {
  private unix?: Server;
  private tcp?: Server;
  /** Where each listener is, once listening. */
  socket?: string;
  tcpAddress?: string;

  constructor(private readonly options: ServiceApiOptions) {}

  /**
   * Listens on the socket, and on TCP when configured. Throws a {@link ServiceApiError} with one
   * readable sentence when it cannot: the path is taken by something that is not a stale socket,
   * another server answers on it, or the token file is missing or looser than 0600.
   */
  async listen(): Promise<void> {
    const { options } = this;
    const socketPath = options.socketPath ?? options.layout.dispatch.apiSocket;
    await claimSocketPath(socketPath);
    this.unix = createServer(
      serviceHandler(options.backend, {
        maxBodyBytes: options.maxBodyBytes,
        source: "api:unix",
        log: options.log,
      }),
    );
    harden(this.unix, options.log);
    await listenOn(this.unix, socketPath);
    await chmod(socketPath, 0o600);
    this.socket = socketPath;
    if (options.tcpPort !== undefined) {
      const token = await apiToken(options.layout, options.log);
      const host = options.tcpHost ?? "127.0.0.1";
      this.tcp = createServer(
        serviceHandler(options.backend, {
          token,
          maxBodyBytes: options.maxBodyBytes,
          source: "api:tcp",
          log: options.log,
        }),
      );
      harden(this.tcp, options.log);
      await listenOn(this.tcp, { host, port: options.tcpPort });
      const address = this.tcp.address();
      this.tcpAddress =
        address && typeof address === "object"
          ? `${address.address}:${address.port}`
          : `${host}:${options.tcpPort}`;
      if (!isLoopback(host))
        options.log(`warning: the service API listens on ${this.tcpAddress}, beyond this machine`);
    }
  }

  /** Stops listening, ends idle connections, and removes the socket. */
  async close(): Promise<void> {
    const servers = [this.unix, this.tcp].filter((server): server is Server => server !== undefined);
    await Promise.all(
      servers.map(
        (server) =>
          new Promise<void>((resolve) => {
            server.close(() => resolve());
            server.closeIdleConnections();
            setTimeout(() => server.closeAllConnections(), 2000).unref();
          }),
      ),
    );
    // The server removes its socket file on close; a leftover from a crash is claimed at start.
    this.unix = undefined;
    this.tcp = undefined;
  }
}

/** Slow or broken clients cannot hold the API: bounded headers and request time. */
function harden(server: Server, log: (line: string) => void): void {
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  server.maxHeadersCount = 100;
  server.on("clientError", (error: NodeJS.ErrnoException, socket) => {
    log(`service API: a request could not be read (${error.code ?? error.message})`);
    if (socket.writable)
      socket.end("HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n");
    else socket.destroy();
  });
}

function listenOn(server: Server, where: string | { host: string; port: number }): Promise<void> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      const place = typeof where === "string" ? where : `${where.host}:${where.port}`;
      reject(
        new ServiceApiError(`the service API cannot listen on ${place}: ${error.code ?? error.message}`),
      );
    };
    server.once("error", failed);
    const listening = () => {
      server.off("error", failed);
      resolve();
    };
    if (typeof where === "string") server.listen(where, listening);
    else server.listen(where.port, where.host, listening);
  });
}

/**
 * Makes the socket path free to bind: nothing there, or a socket nobody answers on (left by a
 * crash), which is removed. Anything else is refused and left alone.
 */
export async function claimSocketPath(path: string): Promise<void> {
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    throw new ServiceApiError(
      `the service API socket path ${path} is ${Buffer.byteLength(path)} bytes, over the ${MAX_SOCKET_PATH} a Unix socket allows; use a shorter GSTACK_HOME`,
    );
  }
  let info: Awaited<ReturnType<typeof lstat>>;
  try {
    info = await lstat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if (!info.isSocket()) {
    throw new ServiceApiError(
      `${path} exists and is not a socket; the service API will not replace it (move it away and restart the daemon)`,
    );
  }
  if (await answers(path)) {
    throw new ServiceApiError(`another process already serves ${path}; the service API is not started`);
  }
  await rm(path, { force: true });
}

function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(path);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\./.test(host);
}

/**
 * The bearer token of the TCP listener: the macOS keychain (service `gstack-api`), else
 * `.api-token`, which must be 0600 (a looser file is
 * refused). A missing one is created with a random token, so turning on `api_port` is enough.
 */
export async function apiToken(layout: GstackLayout, log: (line: string) => void): Promise<string> {
  const fromKeychain = await keychainToken(API_KEYCHAIN_SERVICE);
  if (fromKeychain) return fromKeychain;
  try {
    return await readSecretFile(layout.apiToken);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      throw new ServiceApiError(`the service API over TCP is not started: ${(error as Error).message}`);
    }
  }
  const token = randomBytes(32).toString("base64url");
  await writeFileAtomic(layout.apiToken, `${token}\n`, { mode: 0o600 });
  log(`created ${layout.apiToken} (mode 0600) with a new service API token`);
  return token;
}
