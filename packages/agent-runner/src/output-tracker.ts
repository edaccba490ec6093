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

const GSTACK_RESULT_PREFIX = "GSTACK_RESULT: ";

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

  /** Text the agent said: kept as the latest, and searched for gstack's result line. */
  protected said(text: string): void {
    this.recorded.lastAssistantText = clip(text);
    this.noteGstackResult(text);
  }

  /** Keeps the last `GSTACK_RESULT: ` line of `text`, when it has one. */
  protected noteGstackResult(text: string): void {
    if (!text.includes(GSTACK_RESULT_PREFIX)) return;
    for (const raw of text.split("\n")) {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      if (line.startsWith(GSTACK_RESULT_PREFIX)) this.recorded.gstackResultLine = clip(line);
    }
  }

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
