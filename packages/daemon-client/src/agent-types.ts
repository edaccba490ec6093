import type { TokenUsage } from "@gstack/agent-runner";
import type { FailureKind } from "@gstack/contracts";

/** What the daemon knows about a running agent, updated as its output arrives. */
export interface AgentProgress {
  sessionId?: string;
  turns: number;
  toolUses: number;
  lastText?: string;
  lastAction?: string;
  costUsd?: number;
  /** Tokens used, when the agent reports them (an ACP agent: with its prompt's answer). */
  usage?: TokenUsage;
}

/** Why an agent run failed and what a retry should do about it. */
export interface AgentFailure {
  kind: FailureKind;
  retryable: boolean;
  message: string;
  /** True when the retry should leave the dispatch's learnings out of the prompt. */
  retryWithoutLearnings: boolean;
}

/** How an agent run ended. */
export interface AgentRunResult {
  exitCode: number | null;
  signal: string | null;
  cancelled: boolean;
  timedOut: boolean;
  progress: AgentProgress;
  /** The agent's final answer, when it gave one. */
  result?: string;
  /** The last `GSTACK_RESULT:` line the agent said, as said. */
  gstackResultLine?: string;
  /** The last 64 KiB of its stdout, held in memory (a report survives a stream file not written). */
  outputTail?: string;
  failure?: AgentFailure;
}

/** A started agent process (leader of its own process group). */
export interface RunningAgent {
  pid: number;
  done: Promise<AgentRunResult>;
  /** Signals the whole process group: SIGTERM, then SIGKILL after a grace period. */
  cancel(reason?: string): void;
  /** True once the agent's own process has exited (optional for starters that cannot tell). */
  ended?(): boolean;
  progress(): AgentProgress;
}

/** Options for one agent run. */
export interface StartAgentOptions {
  /** A built-in agent or one the config names (`targetAgentPattern`). */
  agent: string;
  prompt: string;
  cwd: string;
  /**
   * A session to continue, started earlier in the same `cwd`: Claude Code's `--resume`, an ACP
   * agent's `session/load` (when it can load sessions).
   */
  resumeSessionId?: string;
  /** Read-only: the agent may look but change nothing (Claude Code's plan permission mode). */
  planOnly?: boolean;
  env?: Record<string, string | undefined>;
  allowedTools?: string[];
  disallowedTools?: string[];
  /** Program and arguments for non-Claude agents; `{prompt}` is replaced by the prompt. */
  command?: string[];
  /** `acp`: the command is an Agent Client Protocol agent, spoken to over its stdin and stdout. */
  protocol?: "acp";
  /** Lines for the daemon's log (an ACP agent's permission answers and why). */
  onLog?: (line: string) => void;
  /** The Claude Code binary to run (default `claude` on PATH). */
  binary?: string;
  timeoutMs?: number;
  /** Spend cap in US dollars for this run: the agent is stopped when its reported cost reaches it. */
  budgetUsd?: number;
  /** Where the agent's raw output is kept for later reading. */
  streamFile?: string;
  /**
   * Where a supervisor that outlives the daemon records how the agent ended (see
   * `run/exit-record.ts`); it then keeps `streamFile` itself.
   */
  exitFile?: string;
  onProgress?: (progress: AgentProgress) => void;
}

/** Starts an agent. The daemon takes this as a parameter so the runner can be swapped. */
export type AgentStarter = (options: StartAgentOptions) => RunningAgent;

/**
 * How one start of an agent ended, written (and synced) the moment its result is known and before
 * anything else is done with it: `sessions/{id}/exit-{n}.json`, `n` the start's `spawnNumber`. A daemon killed after this
 * point finishes the dispatch from the record at the next start instead of starting the agent
 * again. A kill between the agent's exit and this write leaves the run unknown; then the next
 * attempt is told it resumes an interrupted run, and the report says the work may have been
 * done twice.
 */
export interface ExitRecord {
  /** The start this record is of: its `spawnNumber` (each attempt and each round has its own). */
  attempt: number;
  result: AgentRunResult;
  /** Why the daemon cancelled the agent, when it did ("shutdown" puts the dispatch back in line). */
  cancel_reason?: "cancel" | "shutdown";
}
