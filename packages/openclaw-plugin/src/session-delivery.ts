import type { OpenClawPluginApi } from "openclaw/plugin-sdk/plugin-entry";
import { cutAtBreak } from "./text-cut";

/** How one posted message's turn ended, as the gateway reports it. */
export type TurnEnd = "ended" | "failed" | "still-running";

/** One message of a session's history, reduced to what delivery checks need. */
export interface HistoryMessage {
  role: string;
  /** All text the message holds, whatever its shape (for finding a report's key). */
  text: string;
  /** What the person would read of it: its text parts alone, without tool calls or metadata. */
  reply?: string;
}

/**
 * What report delivery needs from OpenClaw: put a message into a session as a turn of its
 * agent (kept in its transcript; the agent's answer is not sent anywhere by OpenClaw), learn
 * when that turn ended, read the session's own history to confirm the message is there and
 * find the agent's answer, and send a plain message to the person on the session's channel.
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
   * its last inbound message came by). `no-route` when the session has no channel to send on
   * (a CLI or web session, whose person reads the session itself).
   */
  tellPerson?(input: { sessionKey: string; text: string }): Promise<PersonDelivery>;
  /**
   * Whether OpenClaw itself resumes the session's turn that a restart interrupted (its
   * main-session restart recovery), or is still doing so: that resumed turn is the report's one
   * more look, and the plugin adds none of its own.
   */
  resuming?(sessionKey: string): Promise<boolean>;
}

/** What became of a report sent to the person's channel. */
export type PersonDelivery = "sent" | "no-route";

/** How many of a session's newest messages are read to confirm a delivery. */
const HISTORY_LIMIT = 400;

/**
 * The channel through the plugin runtime's `subagent` helpers, which an installed plugin
 * may use: `run` is the gateway's `agent` method for the session key (the report becomes a
 * user message of that session, kept in its transcript), `waitForRun` is `agent.wait`, and
 * `getSessionMessages` is `sessions.get`. Turns run with `deliver: false`: the person is sent
 * the plugin's own message, and the agent's answer only when it adds to it (report-outbox.ts),
 * so OpenClaw neither sends the same news a second time nor an error for a NO_REPLY.
 */
export function runtimeSessionChannel(api: OpenClawPluginApi): SessionChannel {
  // Read when used, not at registration: OpenClaw's CLI registers plugins without a runtime.
  const subagent = () => api.runtime.subagent;
  return {
    async post({ sessionKey, text, idempotencyKey }) {
      const { runId } = await subagent().run({ sessionKey, message: text, deliver: false, idempotencyKey });
      return runId;
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
        text: withinLimit(text, adapter.textChunkLimit),
        accountId: route.accountId ?? null,
        threadId: route.threadId ?? null,
      });
      return "sent";
    },
    async resuming(sessionKey) {
      const agentId = agentOfSessionKey(sessionKey);
      const entry = api.runtime.agent.session.getSessionEntry({
        sessionKey,
        ...(agentId ? { agentId } : {}),
        readConsistency: "latest",
      }) as RecoveryFields | undefined;
      return resumedByOpenClaw(entry);
    },
    async history(sessionKey) {
      const { messages } = await subagent().getSessionMessages({ sessionKey, limit: HISTORY_LIMIT });
      return messages.map(historyMessage);
    },
  };
}

/**
 * A message within a channel's limit of characters: whole when it fits, else cut at a line
 * (or a word) with a last line saying how to read the rest. Person messages are written to fit
 * 2,000 characters; this holds for a channel with a smaller limit.
 */
export function withinLimit(text: string, limit: number | undefined): string {
  const chars = [...text];
  if (!limit || limit <= 0 || chars.length <= limit) return text;
  const tail = "… Say “show the full report” to read the rest.";
  return `${cutAtBreak(text, limit - [...tail].length - 1)}\n${tail}`;
}

/** The role and all text of one message as `sessions.get` returns it, whatever its shape. */
export function historyMessage(message: unknown): HistoryMessage {
  const record = (message ?? {}) as {
    role?: unknown;
    content?: unknown;
    message?: { role?: unknown; content?: unknown };
  };
  const role = typeof record.role === "string" ? record.role : String(record.message?.role ?? "");
  const reply = visibleText(record.content ?? record.message?.content);
  return { role, text: collectText(message), ...(reply !== undefined ? { reply } : {}) };
}

/** The text parts of a message's content (a string, or parts of which `type: "text"` are read). */
function visibleText(content: unknown): string | undefined {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return undefined;
  const parts = content.flatMap((part) => {
    const piece = part as { type?: unknown; text?: unknown };
    return piece && piece.type === "text" && typeof piece.text === "string" ? [piece.text] : [];
  });
  return parts.length > 0 ? parts.join("\n") : undefined;
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

/** The session entry's fields of OpenClaw's main-session restart recovery (2026.9). */
export interface RecoveryFields {
  status?: string;
  abortedLastRun?: boolean;
  mainRestartRecovery?: { tombstone?: unknown } | null;
}

/**
 * Whether a session entry shows OpenClaw resuming a turn a restart cut off: a turn marked
 * aborted while running (recovery pending), or a recovery cycle under way that was not given
 * up (tombstoned).
 */
export function resumedByOpenClaw(entry: RecoveryFields | undefined): boolean {
  if (!entry) return false;
  if (entry.status === "running" && entry.abortedLastRun === true) return true;
  const cycle = entry.mainRestartRecovery;
  return Boolean(cycle) && !cycle?.tombstone && entry.status === "running";
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
