/** Where a running gateway listens and the token it asks for (an OpenClawGateway has both). */
export interface GatewayAddress {
  port: number;
  token: string;
}

export interface GatewayRequestOptions {
  /**
   * Wait for the method's final answer, not the first acknowledgement (OpenClaw's `agent` answers
   * "accepted" at once and its result when the turn is over; `openclaw agent` waits for the final).
   */
  expectFinal?: boolean;
  /** How long to wait for the answer. Default: the connection's `requestTimeoutMs`. */
  timeoutMs?: number;
}

export interface GatewayConnectOptions {
  /** How long to wait for the gateway's hello. Default 60 s. */
  connectTimeoutMs?: number;
  /** How long a request waits for its answer unless told otherwise. Default 60 s. */
  requestTimeoutMs?: number;
}

/**
 * One WebSocket connection to a running gateway, as the `openclaw` CLI makes for each command
 * but kept open: token auth, no device identity, an operator with admin, read and write scopes.
 */
export interface GatewayConnection {
  /** `ws://127.0.0.1:<port>`. */
  readonly url: string;
  /** True once closed, by `close` or because the gateway went away; requests then fail at once. */
  readonly closed: boolean;
  /**
   * Calls a gateway method and resolves with its answer's payload. Rejects with a
   * {@link GatewayRequestError} naming the method and the gateway when the gateway answers with
   * an error, the wait runs out, or the connection closes (a gateway stopped or killed) first.
   */
  request<T = unknown>(method: string, params?: unknown, options?: GatewayRequestOptions): Promise<T>;
  /** Closes the connection; pending requests fail. Safe to call more than once. */
  close(): Promise<void>;
}

/** A gateway request that failed; `code` and `details` are the gateway's own when it answered. */
export class GatewayRequestError extends Error {
  readonly method: string;
  readonly url: string;
  /** The gateway's error code (e.g. `INVALID_REQUEST`), or the client's (`CLIENT_TIMEOUT`). */
  readonly code: string | undefined;
  readonly details: unknown;

  constructor(method: string, url: string, cause: unknown) {
    const fields = (cause ?? {}) as { message?: unknown; code?: unknown; details?: unknown };
    const code = typeof fields.code === "string" ? fields.code : undefined;
    const text = typeof fields.message === "string" ? fields.message : String(cause);
    const details = fields.details === undefined ? "" : ` ${JSON.stringify(fields.details)}`;
    super(`${method} on the gateway at ${url} failed: ${code ? `${code}: ` : ""}${text}${details}`, {
      cause,
    });
    this.name = "GatewayRequestError";
    this.method = method;
    this.url = url;
    this.code = code;
    this.details = fields.details;
  }
}

/**
 * Connects to a running gateway in this process with OpenClaw's own client
 * (`GatewayClient` of `openclaw/plugin-sdk/gateway-runtime`) and waits for its hello. A test
 * that asks a gateway many things saves starting an `openclaw` CLI process (a second or more of
 * CPU each) per question. The connection is not made again once it closes: a gateway that went
 * away fails what is pending and what comes later, clearly, instead of being waited for.
 */
export async function connectGateway(
  gateway: GatewayAddress,
  options: GatewayConnectOptions = {},
): Promise<GatewayConnection> {
  const url = `ws://127.0.0.1:${gateway.port}`;
  const connectTimeoutMs = options.connectTimeoutMs ?? 60_000;
  const requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
  // Loaded on first use: it is a large module graph, which a test that never connects skips.
  const { GatewayClient } = await import("openclaw/plugin-sdk/gateway-runtime");
  let closedBy: Error | undefined;
  let helloSeen = false;
  let settleHello: (error?: Error) => void = () => undefined;
  const hello = new Promise<void>((resolve, reject) => {
    settleHello = (error) => (error ? reject(error) : resolve());
  });
  const client = new GatewayClient({
    url,
    token: gateway.token,
    clientName: "cli",
    mode: "cli",
    role: "operator",
    scopes: ["operator.admin", "operator.read", "operator.write"],
    deviceIdentity: null,
    requestTimeoutMs,
    onHelloOk: () => {
      helloSeen = true;
      settleHello();
    },
    onClose: (code, reason) => {
      closedBy ??= new Error(`the connection closed (${code}${reason ? ` ${reason}` : ""})`);
      // Never made again: the client would otherwise keep trying a gateway that is gone.
      client.stop();
      if (!helloSeen)
        settleHello(
          new Error(`the gateway at ${url} closed the connection before its hello (${code} ${reason})`),
        );
    },
  });
  const timer = setTimeout(
    () => settleHello(new Error(`the gateway at ${url} sent no hello within ${connectTimeoutMs} ms`)),
    connectTimeoutMs,
  );
  client.start();
  try {
    await hello;
  } catch (error) {
    closedBy ??= error as Error;
    await client.stopAndWait({ timeoutMs: 5_000 }).catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
  }
  return {
    url,
    get closed() {
      return closedBy !== undefined;
    },
    async request<T>(method: string, params?: unknown, requestOptions: GatewayRequestOptions = {}) {
      if (closedBy) throw new GatewayRequestError(method, url, closedBy);
      try {
        return await client.request<T>(method, params, {
          expectFinal: requestOptions.expectFinal ?? false,
          timeoutMs: requestOptions.timeoutMs ?? requestTimeoutMs,
        });
      } catch (error) {
        throw new GatewayRequestError(method, url, error);
      }
    },
    async close() {
      closedBy ??= new Error("the connection was closed by its user");
      await client.stopAndWait({ timeoutMs: 5_000 }).catch(() => client.stop());
    },
  };
}
