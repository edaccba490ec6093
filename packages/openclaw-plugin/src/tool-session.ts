/** The OpenClaw session a tool call came from, as the host reports it. */
export interface ToolSession {
  sessionKey?: string;
  agentId?: string;
  sessionId?: string;
  /**
   * The channel route the turn answers on, as OpenClaw's trusted delivery context says: the
   * person's chat, or a scheduled run's delivery target (its channel and the person's address).
   */
  route?: { channel: string; to: string; accountId?: string; threadId?: string };
}
