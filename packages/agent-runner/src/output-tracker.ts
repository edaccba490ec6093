import type { AgentProgress, AgentResultSummary } from "./agent-progress";

/** Follows one agent's stdout, line by line, and keeps a bounded summary of it. */
export interface OutputTracker {
  /** One complete output line (without the newline). Returns the parsed event when there was one. */
  line(line: string): unknown;
  /** Counts lines skipped by the line splitter and bytes read, kept in the progress record. */
  account(counts: { skippedLines: number; outputBytes: number }): void;
  /** The live progress record (callers take a snapshot). */
  progress(): AgentProgress;
  /** The final report, once the agent gave one. */
  result(): AgentResultSummary | undefined;
}
