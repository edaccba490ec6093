import { type AgentProgress, type AgentResultSummary, emptyProgress } from "./agent-progress";

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

export type Json = Record<string, unknown>;

const maximumTextLength = 4000;

export function isObject(value: unknown): value is Json {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/** Keeps agent text short enough to hold in progress records and reports. */
export function clip(value: string): string {
  return value.length > maximumTextLength ? `${value.slice(0, maximumTextLength - 1)}…` : value;
}

/** The bookkeeping every tracker shares; subclasses read the lines. */
export abstract class BaseOutputTracker implements OutputTracker {
  protected readonly recorded: AgentProgress = emptyProgress();
  protected finalResult: AgentResultSummary | undefined;
  protected lastOutputAt: number | undefined;

  abstract line(line: string): unknown;

  account(counts: { skippedLines: number; outputBytes: number }): void {
    this.recorded.skippedLines = counts.skippedLines;
    this.recorded.outputBytes = counts.outputBytes;
  }

  progress(): AgentProgress {
    if (this.lastOutputAt !== undefined)
      this.recorded.lastOutputAt = new Date(this.lastOutputAt).toISOString();
    return this.recorded;
  }

  result(): AgentResultSummary | undefined {
    return this.finalResult;
  }
}
