import { networkProblem } from "./endpoint-check";
import { type AttemptOutcome, classifyResponse } from "./retry-schedule";

/**
 * One POST of a delivery: never follows a redirect, reads the answer to the end, and says how it
 * ended for the retry schedule (a network failure is transient).
 */
export async function postAttempt(
  fetchImplementation: typeof fetch,
  url: string,
  request: { headers: Record<string, string>; body: string; timeoutMs: number },
  now: () => Date,
): Promise<AttemptOutcome> {
  try {
    const response = await fetchImplementation(url, {
      method: "POST",
      redirect: "manual",
      headers: request.headers,
      body: request.body,
      signal: AbortSignal.timeout(request.timeoutMs),
    });
    await response.arrayBuffer().catch(() => undefined);
    return classifyResponse(response.status, response.headers.get("retry-after"), now().getTime());
  } catch (error) {
    return { kind: "transient", reason: networkProblem(error) };
  }
}
