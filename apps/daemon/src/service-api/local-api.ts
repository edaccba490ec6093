import { access } from "node:fs/promises";
import type { GstackLayout } from "@gstack/contracts";
import { type ApiTarget, ApiUnreachableError, apiRequest } from "./client";

/**
 * The running daemon's service API on this machine, or undefined when no daemon answers on
 * `dispatch/.api.sock` (none runs, or it runs without the API): callers then use the files.
 */
export async function reachDaemonApi(layout: GstackLayout): Promise<ApiTarget | undefined> {
  const target: ApiTarget = { socketPath: layout.dispatch.apiSocket };
  try {
    await access(target.socketPath);
    const health = await apiRequest(target, "GET", "/health", { timeoutMs: 3000 });
    return health.status === 200 ? target : undefined;
  } catch (error) {
    if (error instanceof ApiUnreachableError || (error as NodeJS.ErrnoException).code === "ENOENT") {
      return undefined;
    }
    throw error;
  }
}
