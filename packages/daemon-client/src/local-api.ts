import { access } from "node:fs/promises";
import type { GstackLayout } from "@gstack/contracts";
import type { ApiTarget } from "./client";

/**
 * The running daemon's service API on this machine, or undefined when no daemon answers on
 * `dispatch/.api.sock` (none runs, or it runs without the API): callers then use the files.
 */
export async function reachDaemonApi(layout: GstackLayout): Promise<ApiTarget | undefined> {
  const target: ApiTarget = { socketPath: layout.dispatch.apiSocket };
  try {
    await access(target.socketPath);
  } catch {
    return undefined;
  }
  // The HTTP client is loaded only when there is a socket to talk to.
  const { ApiUnreachableError, apiRequest } = await import("./client");
  try {
    const health = await apiRequest(target, "GET", "/health", { timeoutMs: 3000 });
    return health.status === 200 ? target : undefined;
  } catch (error) {
    if (error instanceof ApiUnreachableError) {
      return undefined;
    }
    throw error;
  }
}
