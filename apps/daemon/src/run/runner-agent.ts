import {
  type AgentProgress as RunnerProgress,
  type AgentRunResult as RunnerResult,
  startAgent,
} from "@gstack/agent-runner";
import type { AgentProgress, AgentRunResult, AgentStarter } from "@gstack/daemon-client";
import { PLAN_PERMISSION_ARGS } from "../await/plan-mode";

function progressOf(progress: RunnerProgress): AgentProgress {
  return {
    turns: progress.turns,
    toolUses: progress.toolUses,
    ...(progress.sessionId ? { sessionId: progress.sessionId } : {}),
    ...(progress.lastAssistantText ? { lastText: progress.lastAssistantText } : {}),
    ...(progress.lastAction ? { lastAction: progress.lastAction } : {}),
    ...(progress.costUsd !== undefined ? { costUsd: progress.costUsd } : {}),
    ...(progress.usage ? { usage: { ...progress.usage } } : {}),
  };
}

/** The daemon's view of a runner's result (also of one read back from a supervisor's record). */
export function resultOf(run: RunnerResult): AgentRunResult {
  const progress = progressOf(run.progress);
  if (run.result?.sessionId && !progress.sessionId) progress.sessionId = run.result.sessionId;
  if (run.result?.costUsd !== undefined) progress.costUsd = run.result.costUsd;
  if (run.result?.usage) progress.usage = { ...run.result.usage };
  if (run.result?.numTurns !== undefined) progress.turns = run.result.numTurns;
  const text = run.result?.text ?? run.progress.lastAssistantText;
  // An ACP agent that answered its prompt is ended by the runner (its stdin closed, then its
  // group stopped): the run succeeded whatever signal that took, as the runner judged.
  const answered = run.failure === undefined && run.result !== undefined;
  return {
    exitCode: answered ? 0 : run.exitCode,
    signal: answered ? null : run.signal,
    cancelled: run.cancelled,
    timedOut: run.timedOut,
    progress,
    ...(text !== undefined ? { result: text } : {}),
    ...(run.outputTail !== undefined ? { outputTail: run.outputTail } : {}),
    ...(run.progress.gstackResultLine !== undefined
      ? { gstackResultLine: run.progress.gstackResultLine }
      : {}),
    ...(run.failure
      ? {
          failure: {
            kind: run.failure.kind,
            retryable: run.failure.retryable,
            message: run.failure.message,
            retryWithoutLearnings: run.failure.retryWithoutLearnings,
          },
        }
      : {}),
  };
}

/**
 * Starts agents with `@gstack/agent-runner`: its own process group, stdin on /dev/null,
 * stream-json followed with bounded memory, failures classified from structured fields.
 */
export const startRunnerAgent: AgentStarter = (options) => {
  const running = startAgent({
    agent: options.agent,
    prompt: options.prompt,
    cwd: options.cwd,
    ...(options.env ? { env: options.env } : {}),
    ...(options.allowedTools ? { allowedTools: options.allowedTools } : {}),
    ...(options.disallowedTools ? { disallowedTools: options.disallowedTools } : {}),
    ...(options.command
      ? { command: { command: options.command, ...(options.protocol ? { protocol: options.protocol } : {}) } }
      : {}),
    // An ACP agent is resumed with session/load and planned in its read-only mode by the runner.
    ...(options.protocol === "acp" && options.resumeSessionId
      ? { resumeSessionId: options.resumeSessionId }
      : {}),
    ...(options.protocol === "acp" && options.planOnly ? { planOnly: true } : {}),
    ...(options.onLog ? { onLog: options.onLog } : {}),
    ...(options.binary ? { binary: options.binary } : {}),
    ...(options.agent === "claude" && (options.resumeSessionId || options.planOnly)
      ? {
          extraArgs: [
            ...(options.resumeSessionId ? ["--resume", options.resumeSessionId] : []),
            // Given after the runner's own `--permission-mode`, which Claude Code lets the last win.
            ...(options.planOnly ? PLAN_PERMISSION_ARGS : []),
          ],
        }
      : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.budgetUsd !== undefined ? { budgetUsd: options.budgetUsd } : {}),
    ...(options.streamFile ? { streamFile: options.streamFile } : {}),
    ...(options.exitFile ? { exitFile: options.exitFile } : {}),
    ...(options.onProgress
      ? { onProgress: (progress: RunnerProgress) => options.onProgress?.(progressOf(progress)) }
      : {}),
    trackGit: false,
  });
  return {
    pid: running.pid ?? -1,
    done: running.done.then(resultOf),
    cancel: (reason) => {
      void running.cancel(reason);
    },
    ended: () => running.ended(),
    progress: () => progressOf(running.progress()),
  };
};
