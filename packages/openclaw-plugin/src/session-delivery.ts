import type { ReplyTo } from "@gstack/contracts";
import type { OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";

/** Posts one message into an OpenClaw session and has its agent take a turn on it. */
export type SessionDelivery = (replyTo: ReplyTo, text: string, dispatchId: string) => Promise<void>;

/**
 * Delivery through the plugin runtime: the report is queued as a system event of the
 * session (keyed by the dispatch id, so a second copy replaces rather than repeats it),
 * then a wake is requested for that session, so its agent runs a turn that reads it.
 */
export function runtimeSessionDelivery(api: OpenClawPluginApi): SessionDelivery {
  return async (replyTo, text, dispatchId) => {
    const agentId = replyTo.agent_id ?? agentOfSessionKey(replyTo.session_key);
    const accepted = api.runtime.system.enqueueSystemEvent(text, {
      sessionKey: replyTo.session_key,
      contextKey: `gstack:${dispatchId}`,
      ...(agentId ? { agentId } : {}),
    });
    if (!accepted) throw new Error(`OpenClaw did not accept the report for session ${replyTo.session_key}`);
    api.runtime.system.requestHeartbeat({
      source: "other",
      intent: "event",
      reason: `gstack:${dispatchId}`,
      sessionKey: replyTo.session_key,
      ...(agentId ? { agentId } : {}),
    });
  };
}

/** `agent:<id>:…` session keys name their agent. */
export function agentOfSessionKey(sessionKey: string): string | undefined {
  const match = /^agent:([^:]+):/.exec(sessionKey);
  return match?.[1];
}
