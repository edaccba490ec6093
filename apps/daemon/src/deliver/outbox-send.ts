import {
  type Dispatch,
  type DispatchSettings,
  type GstackLayout,
  readSecretFile,
  signCallback,
} from "@gstack/contracts";
import type { DeliveryOutbox, OutboxTarget } from "./delivery-outbox";
import { checkCallbackUrl, credentialTransportProblem } from "./delivery-targets";
import { postAttempt } from "./post-attempt";
import { completionCallbackBody, completionMessage, hooksBody } from "./receiver-body";
import type { AttemptOutcome } from "./retry-schedule";

/** What sending one attempt needs. */
export interface SendOptions {
  layout: GstackLayout;
  settings: DispatchSettings;
  now: () => Date;
  fetch: typeof fetch;
  /** The Clawvisor bearer token. */
  readClawvisorToken: () => Promise<string | undefined>;
  /** Time limit of one POST (default 15 s). */
  postTimeoutMs?: number;
}

class RefusedBeforeSending extends Error {}

/** One target per configured receiver, for a dispatch's completion (a callback URL not allowed is failed at once). */
export function outboxTargets(
  settings: DispatchSettings,
  dispatch: Dispatch,
  now: () => Date,
): OutboxTarget[] {
  const targets: OutboxTarget[] = [];
  const first = now().toISOString();
  if (settings.clawvisor_url && dispatch.callback_url) {
    const check = checkCallbackUrl(settings, dispatch.callback_url);
    targets.push(
      check.ok
        ? {
            kind: "clawvisor",
            url: dispatch.callback_url,
            state: "pending",
            attempts: 0,
            next_attempt_at: first,
          }
        : {
            kind: "clawvisor",
            url: dispatch.callback_url,
            state: "failed",
            attempts: 0,
            failed_reason: check.reason,
          },
    );
  }
  if (settings.openclaw_hooks_url) {
    targets.push({
      kind: "openclaw-hooks",
      url: settings.openclaw_hooks_url,
      state: "pending",
      attempts: 0,
      next_attempt_at: first,
    });
  }
  if (settings.openclaw_callback_url) {
    targets.push({
      kind: "gstack-receiver",
      url: settings.openclaw_callback_url,
      state: "pending",
      attempts: 0,
      next_attempt_at: first,
    });
  }
  return targets;
}

async function secret(path: string, what: string): Promise<string> {
  try {
    return await readSecretFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") {
      throw new RefusedBeforeSending(`no ${what} in ${path} (create it with mode 0600)`);
    }
    throw new RefusedBeforeSending(`${what}: ${(error as Error).message.split("\n").join(" ")}`);
  }
}

/** The headers and body for one attempt; throws RefusedBeforeSending when it must not be sent. */
async function request(
  options: SendOptions,
  target: OutboxTarget,
  outbox: DeliveryOutbox,
): Promise<{ headers: Record<string, string>; body: string }> {
  const { layout, settings, now } = options;
  const transport = credentialTransportProblem(target.url);
  if (transport) throw new RefusedBeforeSending(transport);
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "idempotency-key": outbox.dispatch_id,
  };
  const reportPath = layout.dispatch.completedReport(outbox.dispatch_id);
  if (target.kind === "clawvisor") {
    const allowed = checkCallbackUrl(settings, target.url);
    if (!allowed.ok) throw new RefusedBeforeSending(allowed.reason);
    let token: string | undefined;
    try {
      token = await options.readClawvisorToken();
    } catch (error) {
      throw new RefusedBeforeSending(`callback token: ${(error as Error).message.split("\n").join(" ")}`);
    }
    if (token) headers.authorization = `Bearer ${token}`;
    return { headers, body: JSON.stringify(outbox.completion) };
  }
  if (target.kind === "openclaw-hooks") {
    const token = await secret(layout.openclawHooksToken, "OpenClaw hooks token");
    headers.authorization = `Bearer ${token}`;
    const message = completionMessage(outbox.completion, outbox.report_markdown, reportPath);
    return { headers, body: JSON.stringify(hooksBody(target.url, message)) };
  }
  const signingSecret = await secret(layout.callbackSecret, "callback secret");
  const sentAt = now();
  const body = JSON.stringify(completionCallbackBody(outbox.completion, outbox.report_markdown, sentAt));
  return { headers: { ...headers, ...signCallback(body, signingSecret, sentAt) }, body };
}

/** One attempt at one target: the request built (or refused before sending) and POSTed. */
export async function attemptTarget(
  options: SendOptions,
  target: OutboxTarget,
  outbox: DeliveryOutbox,
): Promise<AttemptOutcome> {
  let prepared: { headers: Record<string, string>; body: string };
  try {
    prepared = await request(options, target, outbox);
  } catch (error) {
    if (error instanceof RefusedBeforeSending) return { kind: "permanent", reason: error.message };
    return { kind: "permanent", reason: `could not build the body: ${(error as Error).message}` };
  }
  return postAttempt(
    options.fetch,
    target.url,
    { ...prepared, timeoutMs: options.postTimeoutMs ?? 15_000 },
    options.now,
  );
}
