/** The OpenClaw session a tool call came from, as the host reports it. */
export interface ToolSession {
  sessionKey?: string;
  agentId?: string;
  sessionId?: string;
}
