import type { ClaudeSessionEntry } from "./session-map";

/**
 * What OpenClaw's session store says about an OpenClaw session now. OpenClaw keeps a session's
 * `sessionId` across /new and /reset; what changes is `lifecycleRevision` (a new random id each
 * time the session starts over) and `sessionStartedAt` (set to the moment it starts over).
 */
export interface OpenClawSessionState {
  lifecycle?: string;
  /** Milliseconds since the epoch. */
  startedAt?: number;
}

/**
 * Why the OpenClaw session no longer continues the Claude Code session of `entry`, or undefined
 * when it still does. A recorded lifecycle revision is compared first; an entry from before
 * revisions were recorded is stale when OpenClaw's session started after the Claude session did.
 * OpenClaw's session id changing (a new session rather than a reset) ends it too.
 */
export function openclawStartedOver(
  entry: Pick<ClaudeSessionEntry, "openclawLifecycle" | "openclawSessionId" | "createdAt">,
  state: OpenClawSessionState | undefined,
  turnSessionId: string | undefined,
): string | undefined {
  if (turnSessionId && entry.openclawSessionId && turnSessionId !== entry.openclawSessionId) {
    return "OpenClaw started a new session";
  }
  if (state?.lifecycle !== undefined && entry.openclawLifecycle !== undefined) {
    return state.lifecycle === entry.openclawLifecycle ? undefined : "the session was reset in OpenClaw";
  }
  const began = Date.parse(entry.createdAt);
  if (state?.startedAt !== undefined && Number.isFinite(began) && state.startedAt > began) {
    return "the session was reset in OpenClaw";
  }
  return undefined;
}
