import { spawn } from "node:child_process";
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openclawBin, openclawEnv } from "./run-openclaw";

export interface OpenClawGatewayOptions {
  /** The throw-away home (see makeOpenClawHome). */
  home: string;
  /** Port to listen on; a free one is picked when absent. */
  port?: number;
  /** Shared token clients must present; a random one when absent. */
  token?: string;
  env?: Record<string, string | undefined>;
  /** How long to wait for the gateway to answer HTTP. Default 120 s. */
  startTimeoutMs?: number;
  /** Another OpenClaw entry script to run (as relabelledOpenClaw returns); default openclawBin(). */
  bin?: string;
}

export interface OpenClawGateway {
  port: number;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  token: string;
  /** Milliseconds from spawn until the gateway answered HTTP. */
  startupMs: number;
  /** What the gateway printed so far (stdout and stderr). */
  output(): Promise<string>;
  /** True while the process runs. */
  running(): boolean;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL at once, as a crash would end it; resolves when the process is gone. */
  kill(): Promise<void>;
}

/** A free TCP port on 127.0.0.1, as the OS hands it out. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/**
 * What OpenClaw prints when one of its own fixed start-up timers ran out (its state lease must
 * beat within 5 s of starting): a busy machine's failure, not the configuration's, so the start
 * is made again.
 */
const STARTUP_TIMER_RAN_OUT = /Gateway failed to start: .*did not become ready/;

/** How many times a start cut short by OpenClaw's own start-up timers is made. */
const STARTS = 3;

/**
 * Starts the real `openclaw gateway run` on 127.0.0.1 with token auth, in the given home,
 * and waits until it answers HTTP. Output goes to a file (see runOpenClaw for why). A gateway
 * that exits during start-up because one of OpenClaw's own start-up timers ran out (it happens
 * on a heavily loaded machine) is started again, up to three times in all.
 */
export async function startOpenClawGateway(options: OpenClawGatewayOptions): Promise<OpenClawGateway> {
  for (let start = 1; ; start += 1) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (start >= STARTS || !(error instanceof GatewayExited) || !STARTUP_TIMER_RAN_OUT.test(error.message))
        throw error;
    }
  }
}

/** The gateway process ended before it answered HTTP; the message carries its output. */
class GatewayExited extends Error {}

async function startOnce(options: OpenClawGatewayOptions): Promise<OpenClawGateway> {
  const port = options.port ?? (await freePort());
  const token = options.token ?? `gateway-token-${Math.random().toString(36).slice(2)}`;
  const folder = await mkdtemp(join(tmpdir(), "openclaw-gateway-"));
  const logPath = join(folder, "output.log");
  const log = await open(logPath, "a");
  const started = Date.now();
  const child = spawn(
    process.execPath,
    [
      options.bin ?? openclawBin(),
      "gateway",
      "run",
      "--bind",
      "loopback",
      "--port",
      String(port),
      "--auth",
      "token",
      "--token",
      token,
      "--allow-unconfigured",
    ],
    {
      cwd: options.home,
      env: openclawEnv(options.home, options.env),
      stdio: ["ignore", log.fd, log.fd],
      detached: false,
    },
  );
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    child.once("exit", () => {
      exited = true;
      resolve();
    });
  });
  const output = () => readFile(logPath, "utf8").catch(() => "");
  const deadline = started + (options.startTimeoutMs ?? 120_000);
  const url = `http://127.0.0.1:${port}`;
  for (;;) {
    if (exited) {
      await log.close();
      const printed = await output();
      await rm(folder, { recursive: true, force: true }).catch(() => undefined);
      throw new GatewayExited(`openclaw gateway exited during start-up:\n${printed}`);
    }
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
      await response.arrayBuffer();
      if (response.status < 500) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      await exit;
      await log.close();
      throw new Error(`openclaw gateway did not answer on ${url} in time:\n${await output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  const startupMs = Date.now() - started;
  return {
    port,
    url,
    token,
    startupMs,
    output,
    running: () => !exited,
    async stop(graceMs = 15_000) {
      if (!exited) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exit;
        clearTimeout(timer);
      }
      await log.close().catch(() => undefined);
      await rm(folder, { recursive: true, force: true }).catch(() => undefined);
    },
    async kill() {
      if (!exited) child.kill("SIGKILL");
      await exit;
      await log.close().catch(() => undefined);
      await rm(folder, { recursive: true, force: true }).catch(() => undefined);
    },
  };
}
