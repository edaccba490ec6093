import { request } from "node:http";

/** Where a service API is: a Unix socket, or a TCP address with its bearer token. */
export type ApiTarget = { socketPath: string } | { host: string; port: number; token: string };

export interface ApiResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body, or the raw text when it is not JSON. */
  body: unknown;
  text: string;
}

/** The connection could not be made (nobody listens) or broke before an answer. */
export class ApiUnreachableError extends Error {
  constructor(
    message: string,
    readonly code: string | undefined,
  ) {
    super(message);
  }
}

/**
 * One HTTP request to a service API; resolves with any answer, whatever its status, and
 * rejects with {@link ApiUnreachableError} when no answer came.
 */
export function apiRequest(
  target: ApiTarget,
  method: string,
  path: string,
  options: { body?: string; timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { accept: "application/json", ...options.headers };
    if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = String(Buffer.byteLength(options.body));
    }
    if ("token" in target) headers.authorization = `Bearer ${target.token}`;
    const req = request(
      {
        method,
        path,
        headers,
        ...("socketPath" in target
          ? { socketPath: target.socketPath }
          : { host: target.host, port: target.port }),
        timeout: options.timeoutMs ?? 30_000,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("error", (error: NodeJS.ErrnoException) =>
          reject(new ApiUnreachableError(`the answer broke off: ${error.message}`, error.code)),
        );
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let body: unknown = text;
          try {
            body = JSON.parse(text);
          } catch {}
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body, text });
        });
      },
    );
    req.on("timeout", () => req.destroy(Object.assign(new Error("timed out"), { code: "ETIMEDOUT" })));
    req.on("error", (error: NodeJS.ErrnoException) =>
      reject(
        new ApiUnreachableError(`cannot reach the service API: ${error.code ?? error.message}`, error.code),
      ),
    );
    req.end(options.body);
  });
}
