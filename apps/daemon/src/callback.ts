import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "@gstack/contracts";

/** A completion waiting to be POSTed, kept on disk until it is delivered. */
export interface OutboxEntry {
  dispatch_id: string;
  url: string;
  body: unknown;
  attempts: number;
  last_error?: string;
}

/** The outbox file of one session. */
export function outboxPath(sessionDir: string): string {
  return join(sessionDir, "callback-outbox.json");
}

export async function writeOutbox(sessionDir: string, entry: OutboxEntry): Promise<void> {
  await writeFileAtomic(outboxPath(sessionDir), `${JSON.stringify(entry, null, 2)}\n`);
}

export async function readOutbox(sessionDir: string): Promise<OutboxEntry | undefined> {
  try {
    return JSON.parse(await readFile(outboxPath(sessionDir), "utf8")) as OutboxEntry;
  } catch {
    return undefined;
  }
}

export async function clearOutbox(sessionDir: string): Promise<void> {
  await rm(outboxPath(sessionDir), { force: true });
}

/**
 * POSTs JSON once. Resolves with undefined on a 2xx answer, else with the reason. An
 * `Idempotency-Key` of the dispatch id lets the receiver drop replays.
 */
export async function postJson(
  url: string,
  body: unknown,
  options: { token?: string; idempotencyKey: string; timeoutMs?: number },
): Promise<string | undefined> {
  try {
    const response = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "idempotency-key": options.idempotencyKey,
        ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
    });
    await response.arrayBuffer().catch(() => undefined);
    return response.ok ? undefined : `HTTP ${response.status}`;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Checks that an endpoint answers HTTP at all (any status counts). */
export async function endpointAnswers(url: string, timeoutMs = 5000): Promise<string | undefined> {
  try {
    const response = await fetch(url, { method: "HEAD", signal: AbortSignal.timeout(timeoutMs) });
    await response.arrayBuffer().catch(() => undefined);
    return undefined;
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return cause ?? (error as Error).message;
  }
}
