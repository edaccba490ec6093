import { type ListSessionsResponse, parseValue, SERVICE_API_VERSION } from "@gstack/contracts";
import type { DaemonContext } from "../daemon-context";
import { commitsSince } from "../git";
import type { OfferVerdict } from "../intake-doors";
import type { CancelOutcome, SessionRunner } from "../session-runner";
import type { ServiceBackend } from "./handler";
import { dispatchSnapshot } from "./snapshot";

/** What the service API needs of the daemon's rooms. */
export interface BackendParts {
  context: DaemonContext;
  runner: SessionRunner;
  intake: { isWaiting(id: string): Promise<boolean> };
  offer(text: string, source: string): Promise<OfferVerdict>;
  cancel(id: string, reason: string): Promise<CancelOutcome>;
  mode(): "local-only" | "clawvisor";
  version: string;
}

/**
 * The service API over the daemon's rooms: spawn is the offer door (with `max_queued`), cancel is
 * `requestCancel`, status and list come from the runner's live sessions and the queue, and a
 * finished dispatch from its completion files. Nothing here keeps state of its own.
 */
export function daemonBackend(parts: BackendParts): ServiceBackend {
  const { context, runner } = parts;
  return {
    health: () => ({
      ok: !context.stopping,
      daemon: context.stopping ? "stopping" : "running",
      api_version: SERVICE_API_VERSION,
      pid: process.pid,
      version: parts.version,
      mode: parts.mode(),
      ...(context.stopping
        ? { error: "daemon_stopping" as const, message: "the daemon is stopping and takes no new work" }
        : {}),
    }),
    spawn: (text, source) => parts.offer(text, source),
    retryAfterSeconds: () => runner.estimatedWaitSeconds(),
    snapshot: (id, options) =>
      dispatchSnapshot(
        {
          layout: context.layout,
          now: () => context.now(),
          live: (candidate) => runner.get(candidate)?.state,
          position: (candidate) => runner.position(candidate),
          isWaiting: (candidate) => parts.intake.isWaiting(candidate),
        },
        id,
        options,
      ),
    cancel: (id, reason) => parts.cancel(id, reason),
    list: () => listSessions(context, runner),
  };
}

/** The `list-sessions` answer from the runner's memory: running sessions, then the queue in order. */
export async function listSessions(
  context: DaemonContext,
  runner: SessionRunner,
): Promise<ListSessionsResponse> {
  const now = context.now().getTime();
  const seconds = (since: string) => Math.max(0, Math.round((now - new Date(since).getTime()) / 1000));
  const states = runner.liveStates();
  const running = states.filter((state) => state.status === "running" || state.status === "retrying");
  const sessions = await Promise.all(
    running.map(async (state) => ({
      id: state.id,
      project: state.project,
      elapsed: seconds(state.started_at ?? state.queued_at),
      agent: state.agent,
      turns: state.progress?.turns ?? 0,
      tool_uses: state.progress?.toolUses ?? 0,
      commits: state.started_at ? (await commitsSince(state.project_dir, state.base_sha)).length : 0,
      ...(state.progress?.lastAction ? { last_action: state.progress.lastAction } : {}),
      attempt: state.attempt,
    })),
  );
  const byId = new Map(states.map((state) => [state.id, state]));
  const queue = runner.queue.ids.flatMap((id) => {
    const state = byId.get(id);
    return state ? [{ id, project: state.project, waiting: seconds(state.queued_at) }] : [];
  });
  return parseValue("list-sessions", {
    active: sessions.length,
    max_concurrent: context.settings.max_concurrent,
    queued: queue.length,
    sessions,
    queue,
  });
}
