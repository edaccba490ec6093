import type { EndpointCheck } from "@gstack/daemon-client";
import type { ConfiguredEndpoint } from "./delivery-targets";

function networkProblem(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  if ((error as Error).name === "TimeoutError") return "no answer within the time limit";
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/**
 * Probes one endpoint once and says what it found. Receivers of POSTs (OpenClaw's hooks, the
 * gstack receiver) get an empty JSON POST without credentials: a 401 or 400 proves the route
 * exists, a 404 or 405 means the URL names no such route (deliveries would be refused), a 5xx
 * that the server is in trouble. Clawvisor's base URL gets a GET, and any HTTP answer counts,
 * since its callback routes are per task. Never throws.
 */
export async function checkEndpoint(
  endpoint: ConfiguredEndpoint,
  options: { fetch: typeof fetch; timeoutMs: number },
): Promise<EndpointCheck> {
  const result = (reachable: boolean, detail: string): EndpointCheck => ({
    url: endpoint.url,
    kind: endpoint.kind,
    reachable,
    detail,
  });
  try {
    if (endpoint.kind === "clawvisor") {
      const response = await options.fetch(endpoint.url, {
        method: "GET",
        redirect: "manual",
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      await response.arrayBuffer().catch(() => undefined);
      return response.status >= 500
        ? result(false, `answers with a server error (HTTP ${response.status} to GET)`)
        : result(true, `answers (HTTP ${response.status} to GET)`);
    }
    const response = await options.fetch(endpoint.url, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/json" },
      body: "{}",
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    await response.arrayBuffer().catch(() => undefined);
    const status = response.status;
    if (status === 404 || status === 405) {
      return result(false, `answers, but has no such POST route (HTTP ${status}); check the URL`);
    }
    if (status >= 500) return result(false, `answers with a server error (HTTP ${status})`);
    if (status >= 300 && status < 400) return result(false, `redirects (HTTP ${status}); give the final URL`);
    return result(true, `answers (HTTP ${status} to an unauthenticated probe)`);
  } catch (error) {
    return result(false, `does not answer (${networkProblem(error)}); deliveries wait until it does`);
  }
}

export { networkProblem };
