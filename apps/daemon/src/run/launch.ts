import { join } from "node:path";
import { defaultAcpCommands } from "@gstack/agent-runner";
import type { AgentCommand } from "@gstack/contracts";
import type { AgentFailure, AgentStarter, RunningAgent } from "@gstack/daemon-client";
import {
  commitsSince,
  formatUsd,
  headAndBranch,
  remainingBudget,
  type SessionState,
  spawnNumber,
  workDir,
  writeState,
} from "@gstack/daemon-client";
import { answerPrompt, planInstructions } from "../await/plan-mode";
import { ClockWatch, monotonicNow } from "../clock";
import type { DaemonContext } from "../daemon-context";
import { expiresAt } from "../expiry";
import type { Finisher } from "../finish/finisher";
import { unattendedEnvironment } from "../gstack-run/unattended-environment";
import type { LiveSession } from "../live-session";
import { prepareWorkspace } from "../worktree/prepare";
import { supervisedExitPath } from "./exit-record";
import { untrustedAtLaunch } from "./launch-trust";
import { buildPrompt } from "./prompt";
import { ranMs, schedulePersist, unlessDiskFull } from "./run-time";
import type { RunSettler } from "./settle-run";

/** How agents are started. */
export interface LaunchOptions {
  startAgent: AgentStarter;
  /** Extra environment for agents. */
  agentEnv?: Record<string, string>;
}

/**
 * Launching a session taken from the line: expiry and trust checked, the attempt on disk before the
 * spawn, the dispatch's worktree made ready, the prompt built and the agent started; its run is then
 * handed to the settler.
 */
export class Launcher {
  constructor(
    private readonly context: DaemonContext,
    private readonly options: LaunchOptions,
    private readonly finisher: Finisher,
    private readonly settler: RunSettler,
  ) {}

  /** Launches a session holding a slot; a throw is the runner's to handle (see `launchFailed`). */
  async launch(session: LiveSession): Promise<void> {
    const { context } = this;
    const { state, dispatch } = session;
    const { settings, layout } = context;
    if (session.exited) {
      const { result, cancel_reason: reason } = session.exited;
      session.exited = undefined;
      if (reason) session.cancelReason = reason;
      context.log(
        `finishing ${state.id} from its recorded exit (${describeStart(state)}), not running it again`,
      );
      await this.settler.settle(session, result);
      return;
    }
    const expiry = expiresAt(dispatch, new Date(state.first_seen));
    // Only before its first start: a plan approved after the dispatch's ttl is carried out.
    if (spawnNumber(state) === 1 && expiry && expiry.getTime() <= context.now().getTime()) {
      await context.audit("expired", {
        dispatch_id: state.id,
        reason: `expired at ${expiry.toISOString()} while queued`,
      });
      await this.finisher.finish(session, "cancelled", {
        failure: {
          kind: "cancelled",
          retryable: false,
          message: `expired at ${expiry.toISOString()} before it could start`,
          retryWithoutLearnings: false,
        },
      });
      return;
    }
    // Taken from the line now, in queue order, whatever the checks below take.
    const takenAt = context.now().toISOString();
    if (await this.refusedAtLaunch(session)) return;
    // The attempt is on disk before the agent starts, so a crash from here on counts it; the
    // write overlaps the git queries below.
    state.status = state.attempt > 1 ? "retrying" : "running";
    state.updated_at = context.now().toISOString();
    const persisted = writeState(layout, state);
    // Awaited below, after the git queries; a failure meanwhile must not count as unhandled.
    persisted.catch(() => undefined);
    const firstStart = state.started_at === undefined;
    state.started_at ??= takenAt;
    // The dispatch's own worktree (made once, found again on a retry or after a crash).
    await persisted;
    await prepareWorkspace(context, state, dispatch);
    if (firstStart && !state.worktree) {
      const { commit: baseSha, branch } = await headAndBranch(state.project_dir);
      if (baseSha) state.base_sha = baseSha;
      if (branch) state.branch = branch;
    }
    if (state.attempt > 1 && state.run?.attempt !== state.attempt) {
      // Each attempt's own start, so what it made can be told from what earlier ones made.
      const { commit: head } = await headAndBranch(workDir(state));
      state.run = { attempt: state.attempt, ...(head ? { base_sha: head } : {}) };
    }
    session.firstStarted ??= new Date(state.started_at).getTime();
    const monotonic = () => monotonicNow(context);
    session.runClock ??= {
      startedMs: monotonic(),
      ranBeforeMs: state.ran_ms ?? 0,
      watch: new ClockWatch(context.now, monotonic),
    };
    const agentConfig = settings.agents?.[state.agent];
    const resume =
      (state.restarts ?? 0) > 0
        ? {
            ...(state.branch ? { branch: state.branch } : {}),
            commits: (await commitsSince(workDir(state), state.base_sha)).map(
              (commit) => `${commit.sha.slice(0, 7)} ${commit.subject}`,
            ),
          }
        : undefined;
    const planOnly = state.phase === "plan";
    const prompt = state.continue_with
      ? answerPrompt(state.continue_with.answer)
      : [
          buildPrompt(dispatch, {
            dispatchFile: state.claimed_file,
            includeLearnings: state.include_learnings,
            attempt: state.attempt,
            ...(resume ? { resume } : {}),
          }),
          ...(planOnly ? ["", planInstructions()] : []),
        ].join("\n");
    await persisted;
    const sessionDir = layout.dispatch.sessionDir(state.id);
    // In place, one agent at a time per checkout: a second waits (in its slot) for the first.
    const release = state.in_place ? await this.holdCheckout(state.project_dir) : () => undefined;
    // A cancel that came during the launch (it found no agent to signal) ends it unstarted.
    const cancelRequested = () => session.cancelReason === "cancel";
    const finishUnstarted = async () => {
      release();
      await this.finisher.finish(session, "cancelled", {
        failure: {
          kind: "cancelled",
          retryable: false,
          message: session.cancelMessage ?? "cancel requested",
          retryWithoutLearnings: false,
        },
      });
    };
    if (cancelRequested()) {
      await finishUnstarted();
      return;
    }
    const budgetLeft = remainingBudget(state.budget_usd, state.spent_usd);
    if (budgetLeft === 0) {
      // Earlier attempts spent the whole cap: another would spend past it.
      release();
      await this.finisher.finish(session, "failed", {
        failure: {
          kind: "budget_exhausted",
          retryable: false,
          message: `Spent ${formatUsd(state.spent_usd ?? 0)} of its ${formatUsd(state.budget_usd ?? 0)} budget before this attempt; not started again.`,
          retryWithoutLearnings: false,
        },
      });
      return;
    }
    // Checked again at the last moment: the git queries above took time.
    if (await this.refusedAtLaunch(session)) {
      release();
      return;
    }
    const acp = speaksAcp(state.agent, agentConfig);
    if (state.phase !== undefined && state.agent !== "claude" && !acp) {
      release();
      await this.finisher.finish(session, "failed", {
        failure: {
          kind: "spawn_error",
          retryable: false,
          message: `this dispatch must be planned and approved first, and only Claude Code and ACP agents can plan read-only (its agent is ${state.agent})`,
          retryWithoutLearnings: false,
        },
        countCommits: false,
      });
      return;
    }
    // Looked at again with nothing awaited between here and the spawn: a cancel during the
    // checks above found no agent to signal, and the agent started after it would run on.
    if (cancelRequested()) {
      await finishUnstarted();
      return;
    }
    const resumeId = state.continue_with?.session_id ?? resumeSessionId(state, acp);
    const { environment } = context;
    let agent: RunningAgent;
    try {
      agent = this.options.startAgent({
        agent: state.agent,
        prompt,
        cwd: workDir(state),
        ...(resumeId ? { resumeSessionId: resumeId } : {}),
        ...(planOnly ? { planOnly: true } : {}),
        env: {
          ...agentConfig?.env,
          ...this.options.agentEnv,
          ...unattendedEnvironment({
            dispatchId: state.id,
            stateRoot: layout.root,
            ...(dispatch.reply_to ? { openclawSession: dispatch.reply_to.session_key } : {}),
          }),
        },
        allowedTools: settings.allowed_tools ?? [],
        disallowedTools: environment.disallowedTools,
        ...(acp
          ? {
              command: (agentConfig ?? defaultAcpCommands[state.agent])?.command ?? [state.agent],
              protocol: "acp" as const,
              onLog: (line: string) => context.log(`${state.id}: ${line}`),
            }
          : {}),
        ...(!acp && state.agent !== "claude" && agentConfig ? { command: agentConfig.command } : {}),
        ...(environment.claudeBinary && !acp ? { binary: environment.claudeBinary } : {}),
        // Measured on the monotonic clock, across restarts: a moved wall clock times out nothing.
        timeoutMs: Math.max(1000, settings.session_timeout_seconds * 1000 - ranMs(context, session)),
        streamFile: join(sessionDir, `stream-${spawnNumber(state)}.jsonl`),
        exitFile: supervisedExitPath(layout, state.id, spawnNumber(state)),
        ...(budgetLeft !== undefined ? { budgetUsd: budgetLeft } : {}),
        onProgress: (progress) => {
          state.progress = progress;
          schedulePersist(context, session);
        },
      });
    } catch (error) {
      release();
      throw error;
    }
    session.agent = agent;
    let markRunOver!: () => void;
    session.runOver = new Promise<void>((resolve) => {
      markRunOver = resolve;
    });
    try {
      state.status = state.attempt > 1 ? "retrying" : "running";
      if (agent.pid > 1) {
        state.pid = agent.pid;
        state.pgid = agent.pid;
      }
      state.updated_at = context.now().toISOString();
      // The agent runs: a write failing for space now must not fail or queue it again.
      await writeState(layout, state).catch((error) =>
        unlessDiskFull(context, error, `recording ${state.id}'s agent`),
      );
      await context.audit("spawned", {
        dispatch_id: state.id,
        pid: agent.pid,
        detail: {
          attempt: state.attempt,
          ...(state.rounds ? { rounds: state.rounds } : {}),
          agent: state.agent,
        },
      });
      context.log(`started ${state.id} with ${state.agent} (pid ${agent.pid}, ${describeStart(state)})`);
      await this.settler.settleRun(session, agent);
    } finally {
      session.runOver = undefined;
      markRunOver();
      release();
    }
  }

  /**
   * Trust is checked again right before an agent starts (see `run/launch-trust.ts`): the folder
   * and the repository it belongs to, and once a worktree is made, the repository it was made
   * from. A session no longer trusted ends failed, its reason in the report and the audit log,
   * and no git command runs in the folder. Returns true when it was refused.
   */
  private async refusedAtLaunch(session: LiveSession): Promise<boolean> {
    const { context } = this;
    const { state } = session;
    const trusted = context.currentTrustedRepos
      ? await context.currentTrustedRepos()
      : context.settings.trusted_repos;
    const reason = await untrustedAtLaunch(state.project_dir, trusted, state.worktree);
    if (reason === undefined) return false;
    const message = `refused at launch: ${reason}`;
    await context.audit("rejected", {
      dispatch_id: state.id,
      reason: message,
      detail: { rule: "trusted-repos" },
    });
    context.log(`refused ${state.id} at launch: ${reason}`);
    await this.finisher.finish(session, "failed", {
      failure: { kind: "spawn_error", retryable: false, message, retryWithoutLearnings: false },
      countCommits: false,
    });
    return true;
  }

  /** Checkouts an in-place agent is working in, each released when its run has settled. */
  private readonly checkouts = new Map<string, Promise<void>>();

  private async holdCheckout(folder: string): Promise<() => void> {
    for (let held = this.checkouts.get(folder); held; held = this.checkouts.get(folder)) await held;
    let release!: () => void;
    this.checkouts.set(
      folder,
      new Promise<void>((resolve) => {
        release = () => {
          if (this.checkouts.get(folder) === done) this.checkouts.delete(folder);
          resolve();
        };
      }),
    );
    const done = this.checkouts.get(folder);
    return release;
  }
}

/**
 * The agent session a later attempt continues (Claude Code's `--resume`, an ACP agent's
 * `session/load`): the one the earlier attempt reported, when the run has a worktree of its own
 * (a session resumes only from the folder it began in) and the retry is not one that must leave
 * the context behind.
 */
function resumeSessionId(state: SessionState, acp: boolean): string | undefined {
  if ((state.agent !== "claude" && !acp) || !state.worktree || !state.include_learnings) return undefined;
  if (state.attempt === 1 && (state.restarts ?? 0) === 0) return undefined;
  return state.progress?.sessionId;
}

/**
 * Whether a dispatch's agent is run as an Agent Client Protocol agent: its configured command
 * says `protocol: acp`, or, with none configured, it is an agent whose ACP mode is the default.
 */
export function speaksAcp(agent: string, config: AgentCommand | undefined): boolean {
  if (config) return config.protocol === "acp";
  return Object.hasOwn(defaultAcpCommands, agent);
}

/** "attempt n", with the round once a person's answers started runs of it, for log lines. */
function describeStart(state: SessionState): string {
  return `attempt ${state.attempt}${state.rounds ? ` (round ${state.rounds + 1})` : ""}`;
}

/** A launch that threw before its agent ran, as the completion step is given it. */
export function spawnFailure(error: Error): AgentFailure {
  return { kind: "spawn_error", retryable: false, message: error.message, retryWithoutLearnings: false };
}
