import type { OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";

/** How one posted message's turn ended, as the gateway reports it. */
export type TurnEnd = "ended" | "failed" | "still-running";

/** One message of a session's history, reduced to what delivery checks need. */
export interface HistoryMessage {
  role: string;
  text: string;
}

/**
 * The three things report delivery needs from OpenClaw: put a message into a session (as
 * a turn of its agent, with the reply sent to the person's channel), learn when that turn
 * ended, and read the session's own history to confirm the message is there.
 */
export interface SessionChannel {
  /** Starts a turn of the session's agent on `text`; resolves with the gateway's run id. */
  post(input: { sessionKey: string; text: string; idempotencyKey: string }): Promise<string>;
  /** Waits up to `timeoutMs` for the run to end. */
  waitForTurn(runId: string, timeoutMs: number): Promise<TurnEnd>;
  /** The newest messages of the session, oldest first, from OpenClaw's session data. */
  history(sessionKey: string): Promise<HistoryMessage[]>;
  /**
   * Sends `text` as a plain message to the person on the session's own channel (the route
   * its last inbound message came by), whatever the agent answered. `no-route` when the
   * session has no channel to send on (a CLI or web session, which shows its history).
   */
  tellPerson?(input: { sessionKey: string; text: string }): Promise<PersonDelivery>;
}

/** What became of a report sent to the person's channel. */
export type PersonDelivery = "sent" | "no-route";

/** How many of a session's newest messages are read to confirm a delivery. */
const HISTORY_LIMIT = 400;

/**
 * The channel through the plugin runtime's `subagent` helpers, which an installed plugin
 * may use: `run` is the gateway's `agent` method for the session key (the report becomes a
 * user message of that session, kept in its transcript, and `deliver: true` sends the
 * agent's answer to the session's channel; a session with no channel to answer on gets the
 * turn without it), `waitForRun` is `agent.wait`, and
 * `getSessionMessages` is `sessions.get`.
 */
export function runtimeSessionChannel(api: OpenClawPluginApi): SessionChannel {
  // Read when used, not at registration: OpenClaw's CLI registers plugins without a runtime.
  const subagent = () => api.runtime.subagent;
  return {
    async post({ sessionKey, text, idempotencyKey }) {
      try {
        const { runId } = await subagent().run({ sessionKey, message: text, deliver: true, idempotencyKey });
        return runId;
      } catch (error) {
        // OpenClaw refuses `deliver` for a session other than the main one that has no channel
        // to answer on (a CLI or web session): the turn then runs without it, and the report
        // stays in the session's history.
        try {
          const { runId } = await subagent().run({
            sessionKey,
            message: text,
            deliver: false,
            idempotencyKey: `${idempotencyKey}:in-session`,
          });
          return runId;
        } catch {
          throw error;
        }
      }
    },
    async waitForTurn(runId, timeoutMs) {
      const result = await subagent().waitForRun({ runId, timeoutMs });
      if (result.status === "ok") return "ended";
      if (result.status === "error") return "failed";
      return "still-running";
    },
    async tellPerson({ sessionKey, text }) {
      const route = sessionRoute(api, sessionKey);
      if (!route) return "no-route";
      const adapter = await api.runtime.channel.outbound.loadAdapter(route.channel);
      if (!adapter?.sendText) throw new Error(`channel ${route.channel} has no way to send text`);
      await adapter.sendText({
        cfg: api.config,
        to: route.to,
        text,
        accountId: route.accountId ?? null,
        threadId: route.threadId ?? null,
      });
      return "sent";
    },
    async history(sessionKey) {
      const { messages } = await subagent().getSessionMessages({ sessionKey, limit: HISTORY_LIMIT });
      return messages.map(historyMessage);
    },
  };
}

/** The role and all text of one message as `sessions.get` returns it, whatever its shape. */
export function historyMessage(message: unknown): HistoryMessage {
  const record = (message ?? {}) as { role?: unknown; message?: { role?: unknown } };
  const role = typeof record.role === "string" ? record.role : String(record.message?.role ?? "");
  return { role, text: collectText(message) };
}

function collectText(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return value.map(collectText).join("\n");
  if (value && typeof value === "object") return Object.values(value).map(collectText).join("\n");
  return "";
}

/** `agent:<id>:…` session keys name their agent. */
export function agentOfSessionKey(sessionKey: string): string | undefined {
  const match = /^agent:([^:]+):/.exec(sessionKey);
  return match?.[1];
}

/** Where a session's replies go: the delivery route OpenClaw keeps for it in the session store. */
export interface SessionRoute {
  channel: string;
  to: string;
  accountId?: string;
  threadId?: string | number;
}

interface RouteFields {
  channel?: string;
  to?: string;
  accountId?: string;
  threadId?: string | number;
}

/** A session entry's route fields, in the shape OpenClaw 2026.9 stores them (and the older flat one). */
interface StoredRoute {
  delivery?: {
    kind?: string;
    context?: RouteFields;
    route?: { channel?: string; accountId?: string; target?: { to?: string; threadId?: string | number } };
  };
  deliveryContext?: RouteFields;
  lastChannel?: string;
  lastTo?: string;
  lastAccountId?: string;
  lastThreadId?: string | number;
}

/**
 * The session's route as the channel recorded it from the person's last message
 * (`delivery.context`, else `delivery.route`, else the older `deliveryContext`/`last*`
 * fields); none for a session OpenClaw's own surfaces (the web chat, the CLI) talk to.
 */
export function routeOfEntry(entry: StoredRoute | undefined): SessionRoute | undefined {
  if (!entry) return undefined;
  const delivery = entry.delivery;
  if (delivery?.kind && delivery.kind !== "external") return undefined;
  const fromRoute: RouteFields | undefined = delivery?.route
    ? {
        ...(delivery.route.channel ? { channel: delivery.route.channel } : {}),
        ...(delivery.route.target?.to ? { to: delivery.route.target.to } : {}),
        ...(delivery.route.accountId ? { accountId: delivery.route.accountId } : {}),
        ...(delivery.route.target?.threadId !== undefined
          ? { threadId: delivery.route.target.threadId }
          : {}),
      }
    : undefined;
  const legacy: RouteFields = {
    ...entry.deliveryContext,
    ...(entry.lastChannel && !entry.deliveryContext?.channel ? { channel: entry.lastChannel } : {}),
    ...(entry.lastTo && !entry.deliveryContext?.to ? { to: entry.lastTo } : {}),
    ...(entry.lastAccountId && !entry.deliveryContext?.accountId ? { accountId: entry.lastAccountId } : {}),
    ...(entry.lastThreadId !== undefined && entry.deliveryContext?.threadId === undefined
      ? { threadId: entry.lastThreadId }
      : {}),
  };
  for (const fields of [delivery?.context, fromRoute, legacy]) {
    const { channel, to, accountId, threadId } = fields ?? {};
    if (!channel || !to || channel === "webchat" || channel === "internal") continue;
    return {
      channel,
      to,
      ...(accountId ? { accountId } : {}),
      ...(threadId !== undefined && threadId !== null ? { threadId } : {}),
    };
  }
  return undefined;
}

export function sessionRoute(api: OpenClawPluginApi, sessionKey: string): SessionRoute | undefined {
  const agentId = agentOfSessionKey(sessionKey);
  const entry = api.runtime.agent.session.getSessionEntry({
    sessionKey,
    ...(agentId ? { agentId } : {}),
    readConsistency: "latest",
  }) as StoredRoute | undefined;
  return routeOfEntry(entry);
}
