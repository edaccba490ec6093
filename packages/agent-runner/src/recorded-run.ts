import { readFileSync } from "node:fs";
import { type AgentCommand, parseGstackResultLine } from "@gstack/contracts";
import { adapterFor } from "./agent-adapter";
import { snapshotProgress } from "./agent-progress";
import { classifyFailure } from "./classify-failure";
import type { SupervisedExit } from "./exit-supervisor";
import { LineSplitter } from "./line-splitter";
import type { AgentRunResult } from "./start-agent";

/**
 * The result of a run that ended while nobody followed it, from what its supervisor kept: its
 * output copy, read as the runner reads output live, and its recorded exit. Nothing of the
 * agent's stderr was kept, so a failure is judged from the output and the exit alone.
 */
export function recordedRunResult(options: {
  agent: string;
  command?: AgentCommand;
  streamFile: string;
  exit: SupervisedExit;
  startedAt: string;
  maxLineLength?: number;
}): AgentRunResult {
  const adapter = adapterFor(options.agent, options.command);
  const tracker = adapter.createTracker();
  const splitter = new LineSplitter({ maxLineLength: options.maxLineLength });
  const onLine = (line: string) => {
    tracker.line(line);
  };
  let output: Buffer = Buffer.alloc(0);
  try {
    output = readFileSync(options.streamFile);
  } catch {
    // No copy: the result is judged from the exit alone.
  }
  splitter.push(output, onLine);
  splitter.end(onLine);
  tracker.account({ skippedLines: splitter.stats.skippedLines, outputBytes: splitter.stats.bytes });
  const result = tracker.result();
  const progress = snapshotProgress(tracker.progress());
  const { exit } = options;
  const answered = adapter.protocol === "acp" && result !== undefined;
  const failure = exit.spawn_error
    ? {
        kind: "spawn_error" as const,
        retryable: false,
        retryWithoutLearnings: false,
        message: `Could not start the agent: ${exit.spawn_error}`,
        evidence: "spawn",
      }
    : classifyFailure({
        // An ACP agent that answered its prompt is ended by the runner: its exit says nothing.
        exitCode: answered ? 0 : exit.exit_code,
        signal: answered ? null : exit.signal,
        cancelled: false,
        timedOut: false,
        result,
        progress,
        stderrTail: "",
        expectsResult: adapter.expectsResult,
        agent: adapter.agent,
      });
  const endedAt = new Date(exit.ended_at);
  const gstackResult =
    progress.gstackResultLine === undefined ? undefined : parseGstackResultLine(progress.gstackResultLine);
  return {
    agent: adapter.agent,
    exitCode: exit.exit_code,
    signal: exit.signal,
    cancelled: false,
    timedOut: false,
    startedAt: options.startedAt,
    endedAt: exit.ended_at,
    durationMs: Math.max(0, endedAt.getTime() - Date.parse(options.startedAt)),
    progress,
    result,
    ...(gstackResult ? { gstackResult } : {}),
    failure,
    stderrTail: "",
    streamFile: {
      path: options.streamFile,
      bytes: exit.stream_bytes,
      truncated: exit.stream_truncated,
      ...(exit.stream_error ? { error: exit.stream_error } : {}),
    },
  };
}
