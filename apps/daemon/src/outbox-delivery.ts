import { access, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { GstackLayout } from "@gstack/contracts";
import { clearOutbox, endpointAnswers, postJson, readOutbox, writeOutbox } from "./callback";
import type {
  CompletionDelivery,
  DeliveryContext,
  DeliveryStatus,
  EndpointCheck,
  PendingDelivery,
} from "./completion-delivery";

/** What the daemon hands a delivery factory besides audit and log. */
export interface DaemonDeliveryContext extends DeliveryContext {
  layout: GstackLayout;
  /** The Clawvisor endpoint; without it completions stay on disk (local-only mode). */
  clawvisorUrl?: string;
  /** The bearer token for callbacks, read from `~/.gstack/.callback-token`. */
  token?: string;
  /** Waits between attempts of one round (default 1 s, 5 s, 25 s). */
  delaysMs?: number[];
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Marks a session whose callback was delivered, so a replayed enqueue never sends it twice. */
function deliveredMarker(sessionDir: string): string {
  return join(sessionDir, "callback-delivered");
}

/**
 * The default {@link CompletionDelivery}: a per-session outbox file POSTed to the
 * dispatch's `callback_url` with the Clawvisor token, retried in rounds, replayed at start
 * and on each heartbeat. Local-only mode (no Clawvisor URL) delivers nothing.
 */
export class OutboxDelivery implements CompletionDelivery {
  private readonly context: DaemonDeliveryContext;
  private readonly delivering = new Set<string>();
  private readonly inFlight = new Set<Promise<void>>();
  private endpoints: EndpointCheck[] = [];
  private readonly failed: DeliveryStatus["failed"] = [];
  private stopping = false;

  constructor(context: DaemonDeliveryContext) {
    this.context = context;
  }

  async start(): Promise<EndpointCheck[]> {
    const url = this.context.clawvisorUrl;
    if (!url) return [];
    const problem = await endpointAnswers(url);
    const check: EndpointCheck = {
      url,
      kind: "clawvisor",
      reachable: problem === undefined,
      detail: problem === undefined ? "answers" : `does not answer (${problem})`,
    };
    if (problem !== undefined) {
      this.context.log(
        `warning: the Clawvisor endpoint ${url} does not answer (${problem}); completions wait in their outbox`,
      );
    }
    this.endpoints = [check];
    return this.endpoints;
  }

  checkCallbackUrl(url: string): { ok: true } | { ok: false; reason: string } {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { ok: false, reason: `callback_url ${url} is not a URL` };
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      return { ok: false, reason: `callback_url ${url} must use http or https` };
    }
    return { ok: true };
  }

  async enqueue(delivery: PendingDelivery): Promise<void> {
    const { dispatch, sessionDir, completion } = delivery;
    if (!dispatch.callback_url) return;
    if (!this.context.clawvisorUrl) {
      this.context.log(
        `local-only mode: the report for ${dispatch.id} stays on disk (callback_url not used)`,
      );
      return;
    }
    if (await exists(deliveredMarker(sessionDir))) return;
    if (!(await readOutbox(sessionDir))) {
      await writeOutbox(sessionDir, {
        dispatch_id: dispatch.id,
        url: dispatch.callback_url,
        body: completion,
        attempts: 0,
      });
    }
    this.track(this.deliver(sessionDir));
  }

  async replay(): Promise<void> {
    if (!this.context.clawvisorUrl || this.stopping) return;
    let names: string[] = [];
    try {
      names = await readdir(this.context.layout.dispatch.sessions);
    } catch {}
    for (const name of names) {
      const sessionDir = join(this.context.layout.dispatch.sessions, name);
      if (this.delivering.has(sessionDir)) continue;
      if (await readOutbox(sessionDir)) this.track(this.deliver(sessionDir));
    }
  }

  status(): DeliveryStatus {
    return { endpoints: this.endpoints, pending: this.delivering.size, failed: [...this.failed] };
  }

  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    await Promise.race([Promise.all([...this.inFlight]), sleep(graceMs)]);
  }

  private track(promise: Promise<void>): void {
    this.inFlight.add(promise);
    void promise.finally(() => this.inFlight.delete(promise));
  }

  private async deliver(sessionDir: string): Promise<void> {
    if (this.delivering.has(sessionDir)) return;
    this.delivering.add(sessionDir);
    try {
      const delays = this.context.delaysMs ?? [1000, 5000, 25_000];
      for (let round = 0; round <= delays.length; round += 1) {
        const entry = await readOutbox(sessionDir);
        if (!entry) return;
        const problem = await postJson(entry.url, entry.body, {
          ...(this.context.token ? { token: this.context.token } : {}),
          idempotencyKey: entry.dispatch_id,
        });
        entry.attempts += 1;
        if (!problem) {
          await writeFile(deliveredMarker(sessionDir), `${new Date().toISOString()}\n`);
          await clearOutbox(sessionDir);
          await this.context.audit("callback_sent", {
            dispatch_id: entry.dispatch_id,
            detail: { url: entry.url, attempts: entry.attempts },
          });
          this.context.log(`callback sent for ${entry.dispatch_id}`);
          return;
        }
        entry.last_error = problem;
        await writeOutbox(sessionDir, entry);
        await this.context.audit("callback_failed", {
          dispatch_id: entry.dispatch_id,
          reason: problem,
          detail: { url: entry.url, attempts: entry.attempts },
        });
        const wait = delays[round];
        if (wait === undefined || this.stopping) break;
        await sleep(wait);
      }
      this.context.log(
        `callback for ${sessionDir.split(/[\\/]/).pop()} not delivered yet; kept in the outbox and retried later`,
      );
    } finally {
      this.delivering.delete(sessionDir);
    }
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}
