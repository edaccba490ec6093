import { SERVICE_API_VERSION } from "@gstack/contracts";
import { discardDispatch, landDispatch, listSessionsOf } from "@gstack/daemon-client";
import { answerFromRequest } from "../await/answer";
import type { DaemonContext } from "../daemon-context";
import type { CancelOutcome, SessionRunner } from "../dispatch/session-runner";
import type { OfferVerdict } from "../intake/intake-doors";
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
    land: (request) => {
      const common = {
        audit: context.audit,
        now: () => context.now(),
        // The list in force now, as at each launch (config.yaml read again when it changed).
        trustedRepos: () =>
          context.currentTrustedRepos
            ? context.currentTrustedRepos()
            : Promise.resolve(context.settings.trusted_repos),
      };
      return request.action === "discard"
        ? discardDispatch(context.layout, request.dispatch_id, { ...common, force: request.force === true })
        : landDispatch(context.layout, request.dispatch_id, { ...common, pr: request.pr === true });
    },
    answer: async (request) => {
      const input = answerFromRequest(request.dispatch_id, request);
      const done = await runner.answer(request.dispatch_id, input);
      return {
        dispatch_id: request.dispatch_id,
        answer: request.answer,
        round: done.round,
        status: done.status,
        message:
          input.kind === "approve"
            ? `approved plan ${done.round}; the agent carries it out in the same session`
            : input.kind === "revise"
              ? `asked for changes to plan ${done.round}; the agent plans again`
              : input.kind === "reply"
                ? `answered gate revision ${done.round} with "${input.reply}"; the agent resumes with it`
                : `rejected round ${done.round}; the dispatch ends cancelled`,
      };
    },
    list: () =>
      listSessionsOf(runner.liveStates(), runner.queue.ids, context.settings.max_concurrent, context.now()),
  };
}
