import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import {
  closeSync,
  createWriteStream,
  existsSync,
  mkdtempSync,
  openSync,
  rmSync,
  type WriteStream,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { Writable } from "node:stream";
import { type AgentCommand, type GstackResultLine, parseGstackResultLine } from "@gstack/contracts";
import { AcpTurn } from "./acp-session";
import type { AcpTracker } from "./acp-tracker";
import { adapterFor } from "./agent-adapter";
import type { AgentFailure } from "./agent-failure";
import { type AgentProgress, type AgentResultSummary, snapshotProgress } from "./agent-progress";
import { AgentRunnerError } from "./agent-runner-error";
import { classifyFailure } from "./classify-failure";
import { readSupervisedExit, SUPERVISOR_SOURCE } from "./exit-supervisor";
import { type GitProgress, gitProgress } from "./git-progress";
import { LineSplitter } from "./line-splitter";
import {
  bootTicksNow,
  RUN_MARKER_VARIABLE,
  type RunTrace,
  sampleRunDescendants,
  stopProcessGroup,
  stopRunLeftovers,
} from "./process-group";
import { defaultAllowedTools } from "./tool-permissions";

export interface StartAgentOptions {
  /** `claude`, `codex`, `gemini`, `cursor`, or any name with a `command`. */
  agent: string;
  prompt: string;
  /** The project directory: the agent's working directory. */
  cwd: string;
  /** Environment overrides on top of this process's environment; `undefined` removes a variable. */
  env?: Record<string, string | undefined>;
  /** Start from an empty environment instead of this process's (overrides still apply). */
  inheritEnv?: boolean;
  /** Claude Code tools granted beyond the defaults. */
  allowedTools?: readonly string[];
  /** Claude Code tool patterns refused (see `restrictionsToDisallowedTools`). */
  disallowedTools?: readonly string[];
  maxTurns?: number;
  /** Model for agents that take one (Claude Code, Codex). */
  model?: string;
  /** Further arguments for the default command line (Claude Code, Codex); bypass flags are refused. */
  extraArgs?: readonly string[];
  /** A configured command line replacing the adapter's default (`{prompt}` placeholder). */
  command?: AgentCommand;
  /** The program to run, e.g. an absolute path to `claude`. */
  binary?: string;
  /** Stop the agent (whole process group) after this long. */
  timeoutMs?: number;
  /** Between SIGTERM and SIGKILL when stopping. Default 5 s. */
  killGraceMs?: number;
  /** Keep a copy of the raw output here (created with mode 0600), up to `streamFileMaxBytes`. */
  streamFile?: string;
  /** Default 64 MiB. */
  streamFileMaxBytes?: number;
  /**
   * Run the agent under a supervisor (see `exit-supervisor.ts`) that outlives this process: it
   * keeps the stream file itself and writes how the agent ended to this file, so a caller that
   * died meanwhile can finish the run from the record (`recordedRunResult`) instead of running
   * the agent again. The supervisor leads the process group; the agent is its child in it.
   */
  exitFile?: string;
  /** Longest output line parsed, in characters; longer lines are skipped and counted. Default 8 Mi. */
  maxLineLength?: number;
  /** Every parsed output event, as it arrives. */
  onEvent?: (event: unknown) => void;
  /**
   * Progress, at most every `progressIntervalMs` (default 500 ms) and once at the end; output that
   * came within an interval is reported when it is over, even if nothing follows it.
   */
  onProgress?: (progress: AgentProgress) => void;
  progressIntervalMs?: number;
  /** Record git progress (commits since start) in the result. Default true. */
  trackGit?: boolean;
  /**
   * Spend cap in US dollars. Claude Code gets it as `--max-budget-usd` and stops itself; for
   * every agent, the runner stops the whole process group as soon as the cost the agent reports
   * reaches it. Either way the run fails as `budget_exhausted`, saying what was spent.
   */
  budgetUsd?: number;
  /**
   * Read-only (ACP agents): the agent is put in its read-only mode when it offers one, and every
   * permission request to change or run anything is refused.
   */
  planOnly?: boolean;
  /** An ACP agent's earlier session to continue with `session/load`, when the agent can load sessions. */
  resumeSessionId?: string;
  /** Lines worth a run log: for ACP agents, each permission answer and why. */
  onLog?: (line: string) => void;
}

/** How a run ended. */
export interface AgentRunResult {
  agent: string;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  cancelled: boolean;
  cancelReason?: string;
  timedOut: boolean;
  startedAt: string;
  endedAt: string;
  durationMs: number;
  progress: AgentProgress;
  /** Summary of the agent's final report, when it gave one. */
  result?: AgentResultSummary;
  /**
   * gstack's verdict: the last `GSTACK_RESULT:` line the agent said, parsed. Absent when there
   * was none or the last one does not parse (then `progress.gstackResultLine` holds it as said).
   */
  gstackResult?: GstackResultLine;
  /** Absent on success. */
  failure?: AgentFailure;
  /** Commits since the start, when the working directory is a git repository. */
  git?: GitProgress;
  /** HEAD when the run started. */
  startSha?: string;
  /** The last part of stderr. */
  stderrTail: string;
  /**
   * The last 64 KiB of the agent's stdout as it arrived, held in memory: a plain-text report is
   * still there when the stream file could not be written (a full disk).
   */
  outputTail?: string;
  /** The raw output copy, when asked for. */
  streamFile?: { path: string; bytes: number; truncated: boolean; error?: string };
}

/** A started agent. */
export interface RunningAgent {
  /** Process id; also the process group id. Undefined when the program could not be started. */
  pid: number | undefined;
  /** HEAD when the run started, if `cwd` is a git repository with commits. */
  startSha: string | undefined;
  startedAt: Date;
  /** Settles once the agent and every process of its group are gone. Never rejects. */
  done: Promise<AgentRunResult>;
  /** Stops the whole process group (SIGTERM, grace, SIGKILL) and waits for `done`. */
  cancel(reason?: string): Promise<void>;
  /** True once the agent's own process has exited: a cancel from then on changes nothing. */
  ended(): boolean;
  /** A snapshot of the progress so far. */
  progress(): AgentProgress;
  /** Git's view right now: commits since the start. */
  gitProgress(): Promise<GitProgress | undefined>;
}

const stderrTailBytes = 16 * 1024;
const outputTailBytes = 64 * 1024;

/**
 * Whether `cwd` is in a git work tree and which commit HEAD is, in one git call
 * (`rev-parse` prints `true` before failing on a repository without commits).
 */
function gitStart(cwd: string): { repository: boolean; head?: string; directories: string[] } {
  let output: string;
  try {
    output = execFileSync(
      "git",
      ["rev-parse", "--is-inside-work-tree", "--absolute-git-dir", "--git-common-dir", "HEAD"],
      {
        cwd,
        stdio: ["ignore", "pipe", "ignore"],
        encoding: "utf8",
      },
    );
  } catch (error) {
    output = String((error as { stdout?: unknown }).stdout ?? "");
  }
  const [inside, gitDirectory = "", commonDirectory = "", head] = output.trim().split("\n");
  if (inside !== "true") return { repository: false, directories: [] };
  const directories = [...new Set([gitDirectory, resolve(cwd, commonDirectory)].filter(Boolean))];
  return { repository: true, head: head && /^[0-9a-f]{40,64}$/.test(head) ? head : undefined, directories };
}

export { RUN_MARKER_VARIABLE };

function environmentOf(options: StartAgentOptions, adapterEnv: Record<string, string>): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = options.inheritEnv === false ? {} : { ...process.env };
  for (const [name, value] of Object.entries({ ...adapterEnv, ...(options.env ?? {}) })) {
    if (value === undefined) delete environment[name];
    else environment[name] = value;
  }
  return environment;
}

/**
 * Starts a coding agent for one task and follows it. The agent gets `cwd` as its working
 * directory, a readable stdin that is at end of file (`/dev/null`, not closed: Claude Code exits
 * silently without one) and its own process group, so cancel and timeout reach every process it
 * started. Its output is parsed as it arrives with bounded memory. Throws only for options that
 * are unsafe or invalid; everything that happens after the start is reported through `done`.
 */
export function startAgent(options: StartAgentOptions): RunningAgent {
  const adapter = adapterFor(options.agent, options.command);
  if (!existsSync(options.cwd)) {
    throw new AgentRunnerError("invalid_option", `The working directory ${options.cwd} does not exist.`);
  }
  if (options.budgetUsd !== undefined && !(Number.isFinite(options.budgetUsd) && options.budgetUsd > 0)) {
    throw new AgentRunnerError(
      "invalid_option",
      `budgetUsd must be an amount above 0, got ${options.budgetUsd}.`,
    );
  }
  // A configured command line is used as written, so it takes no git directories either.
  const needsGitDirectories = adapter.needsGitDirectories === true && options.command === undefined;
  const inspectGit = options.trackGit !== false || needsGitDirectories;
  const start: ReturnType<typeof gitStart> = inspectGit
    ? gitStart(options.cwd)
    : { repository: false, directories: [] };
  const commandLine = adapter.commandLine({
    gitDirectories: start.directories,
    prompt: options.prompt,
    allowedTools: options.allowedTools,
    disallowedTools: options.disallowedTools,
    maxTurns: options.maxTurns,
    model: options.model,
    extraArgs: options.extraArgs,
    binary: options.binary,
    command: options.command,
    ...(options.budgetUsd !== undefined ? { maxBudgetUsd: options.budgetUsd } : {}),
  });
  if (options.timeoutMs !== undefined && !(options.timeoutMs > 0)) {
    throw new AgentRunnerError("invalid_option", `timeoutMs must be positive, got ${options.timeoutMs}.`);
  }
  const trackGit = options.trackGit !== false && start.repository;
  const startSha = trackGit ? start.head : undefined;
  const tracker = adapter.createTracker();
  const splitter = new LineSplitter({ maxLineLength: options.maxLineLength });
  const startedAt = new Date();
  const killGraceMs = options.killGraceMs ?? 5_000;
  const progressInterval = options.progressIntervalMs ?? 500;

  let cancelled = false;
  let cancelReason: string | undefined;
  let timedOut = false;
  let budgetStop: { spentUsd: number; budgetUsd: number } | undefined;
  let stopping: Promise<unknown> | undefined;
  let stderrTail = "";
  let outputTail: Buffer = Buffer.alloc(0);
  let lastProgressAt = 0;
  let spawnError: Error | undefined;
  let leaderExited = false;

  let tee: WriteStream | undefined;
  let teeBytes = 0;
  let teeTruncated = false;
  const teeLimit = options.streamFileMaxBytes ?? 64 * 1024 * 1024;
  let teeError: string | undefined;
  // Under a supervisor, the supervisor keeps the copy (it must go on once this process is gone).
  if (options.streamFile && options.exitFile === undefined) {
    tee = createWriteStream(options.streamFile, { flags: "w", mode: 0o600 });
    // The copy is a convenience: failing to write it must not fail or crash the run.
    tee.on("error", (error) => {
      teeError = error.message;
      teeTruncated = true;
      child?.stdout?.resume();
    });
  }

  const acp = adapter.protocol === "acp";
  // An ACP agent is spoken to on its stdin; under a supervisor it inherits the same pipe.
  const stdin = acp ? undefined : openStdin(commandLine.stdin);
  const marker = `${RUN_MARKER_VARIABLE}=${randomUUID()}`;
  const environment = environmentOf(options, commandLine.env);
  environment[RUN_MARKER_VARIABLE] = marker.slice(RUN_MARKER_VARIABLE.length + 1);
  const spawnedAfter = bootTicksNow();
  let child: ChildProcess | undefined;
  try {
    const [file, args] =
      options.exitFile === undefined
        ? [commandLine.file, commandLine.args]
        : [
            process.execPath,
            [
              "-e",
              SUPERVISOR_SOURCE,
              options.exitFile,
              options.streamFile ?? "",
              String(teeLimit),
              commandLine.file,
              ...commandLine.args,
            ],
          ];
    child = spawn(file, args, {
      cwd: options.cwd,
      env: environment,
      stdio: [stdin ?? "pipe", "pipe", "pipe"],
      detached: true,
    });
  } finally {
    if (stdin !== undefined) closeSync(stdin);
  }
  const running = child;
  const pid = running.pid;
  const trace: RunTrace | undefined =
    pid === undefined
      ? undefined
      : { sessionId: pid, marker, ...(spawnedAfter === undefined ? {} : { startTime: spawnedAfter }) };

  // The ACP conversation: the agent's output goes to the tracker and to the protocol's client.
  let acpOutput: ReadableStreamDefaultController<Uint8Array> | undefined;
  let acpTurn: AcpTurn | undefined;
  let acpTurnDone: Promise<unknown> | undefined;
  let acpTurnOver = false;
  if (acp && pid !== undefined && running.stdin) {
    running.stdin.on("error", () => undefined);
    const output = new ReadableStream<Uint8Array>({
      start(controller) {
        acpOutput = controller;
      },
    });
    acpTurn = new AcpTurn({
      input: Writable.toWeb(running.stdin) as WritableStream<Uint8Array>,
      output,
      cwd: options.cwd,
      prompt: options.prompt,
      tracker: tracker as AcpTracker,
      policy: {
        cwd: options.cwd,
        allowedTools: [...defaultAllowedTools, ...(options.allowedTools ?? [])],
        disallowedTools: options.disallowedTools ?? [],
        ...(options.planOnly ? { planOnly: true } : {}),
      },
      ...(options.resumeSessionId ? { loadSessionId: options.resumeSessionId } : {}),
      log: (line) => guarded("onLog", () => options.onLog?.(line)),
    });
    acpTurnDone = acpTurn.run().then((state) => {
      acpTurnOver = true;
      if (state.error !== undefined && !tracker.result()) {
        const message = state.error instanceof Error ? state.error.message : JSON.stringify(state.error);
        stderrTail = `${stderrTail}\nACP: ${message}`.slice(-stderrTailBytes);
      }
      // The agent serves further turns until its stdin ends; it is given a moment to go by itself.
      running.stdin?.end();
      setTimeout(() => void stop(), Math.min(killGraceMs, 2_000)).unref();
    });
  }

  /** An ACP agent is asked to cancel its turn first; its process group is stopped after the grace. */
  const stopTurn = async () => {
    if (acpTurn && !acpTurnOver) {
      await acpTurn.cancel();
      await Promise.race([acpTurnDone, delay(killGraceMs)]);
    }
    return stop();
  };

  // Output that comes within the interval of the last report is reported when the interval is
  // over, not only with the next output: an agent that then waits quietly (on its model, on a
  // tool) would leave it unsaid, such as the session id an ACP agent gives just before it waits.
  let progressTimer: NodeJS.Timeout | undefined;
  let progressOver = false;
  const reportProgress = (force: boolean) => {
    if (!options.onProgress || progressOver) return;
    const now = Date.now();
    const wait = lastProgressAt + progressInterval - now;
    if (!force && wait > 0) {
      progressTimer ??= setTimeout(() => {
        progressTimer = undefined;
        reportProgress(false);
      }, wait);
      return;
    }
    if (progressTimer) clearTimeout(progressTimer);
    progressTimer = undefined;
    if (force) progressOver = true;
    lastProgressAt = now;
    tracker.account({ skippedLines: splitter.stats.skippedLines, outputBytes: splitter.stats.bytes });
    const snapshot = snapshotProgress(tracker.progress());
    guarded("onProgress", () => options.onProgress?.(snapshot));
  };

  const onLine = (line: string) => {
    const event = tracker.line(line);
    if (event !== undefined && options.onEvent) guarded("onEvent", () => options.onEvent?.(event));
    if (options.budgetUsd !== undefined && budgetStop === undefined && !cancelled && !timedOut) {
      const spent = tracker.progress().costUsd;
      // A cost that arrives with the agent's final result ends nothing: the work is done.
      if (spent !== undefined && spent >= options.budgetUsd && tracker.result() === undefined) {
        budgetStop = { spentUsd: spent, budgetUsd: options.budgetUsd };
        void stopTurn();
      }
    }
  };

  running.stdout?.on("data", (chunk: Buffer) => {
    splitter.push(chunk, onLine);
    acpOutput?.enqueue(new Uint8Array(chunk));
    outputTail = Buffer.concat([outputTail, chunk]);
    if (outputTail.length > outputTailBytes) outputTail = outputTail.subarray(-outputTailBytes);
    if (options.streamFile && options.exitFile !== undefined && !teeTruncated) {
      // The supervisor writes the copy; it is counted here the same way.
      const room = teeLimit - teeBytes;
      if (chunk.length > room) teeTruncated = true;
      teeBytes += Math.min(chunk.length, room);
    }
    if (tee && !teeTruncated) {
      const room = teeLimit - teeBytes;
      const piece = chunk.length <= room ? chunk : chunk.subarray(0, room);
      if (piece.length < chunk.length) teeTruncated = true;
      teeBytes += piece.length;
      if (piece.length > 0 && !tee.write(piece)) {
        running.stdout?.pause();
        tee.once("drain", () => running.stdout?.resume());
      }
    }
    reportProgress(false);
  });
  running.stderr?.on("data", (chunk: Buffer) => {
    stderrTail = (stderrTail + chunk.toString("utf8")).slice(-stderrTailBytes);
  });

  running.stdout?.once("end", () => {
    try {
      acpOutput?.close();
    } catch {
      // Already closed.
    }
  });

  const stop = () => {
    if (pid === undefined) return Promise.resolve();
    stopping ??= stopProcessGroup(pid, { graceMilliseconds: killGraceMs });
    return stopping;
  };

  // Descendants are sampled while the run lives, so one that leaves the session and drops the
  // marker is still known once its parent exits; the first sample waits a second, so a short
  // run pays nothing for it.
  const sampler = trace ? setInterval(() => sampleRunDescendants(trace), 1_000) : undefined;
  sampler?.unref();

  const timer =
    options.timeoutMs !== undefined
      ? setTimeout(() => {
          if (leaderExited || cancelled) return;
          timedOut = true;
          void stopTurn();
        }, options.timeoutMs)
      : undefined;

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    running.once("error", (error) => {
      spawnError = error;
      if (pid === undefined) resolve({ code: null, signal: null });
    });
    running.once("exit", (code, signal) => {
      leaderExited = true;
      resolve({ code, signal });
    });
  });
  const outputClosed = new Promise<void>((resolve) => running.once("close", () => resolve()));

  const done = (async (): Promise<AgentRunResult> => {
    const { code, signal } = await exited;
    if (timer) clearTimeout(timer);
    if (sampler) clearInterval(sampler);
    // The leader is gone; anything it left in its group (a dev server, a hung tool) goes too,
    // which also releases the output pipes those processes may hold.
    await stop();
    // What escaped the group (its own group, a new session, a parent that already exited) is
    // found by session and by the run's environment marker, and stopped the same way.
    if (trace) await stopRunLeftovers(trace, { graceMilliseconds: killGraceMs });
    // A supervisor alone holds the pipes this process reads (the agent writes to the supervisor's
    // own), so once it is gone they close when all it wrote is read: that is waited for whole,
    // or the last output could be left unread. An agent run directly may leave a process that
    // holds them open, so its output is waited for a short while only.
    if (pid !== undefined) {
      await (options.exitFile === undefined ? Promise.race([outputClosed, delay(2_000)]) : outputClosed);
    }
    splitter.end(onLine);
    tracker.account({ skippedLines: splitter.stats.skippedLines, outputBytes: splitter.stats.bytes });
    if (tee && !teeError) await new Promise<void>((resolve) => tee!.end(() => resolve()));
    const result = tracker.result();
    const progress = snapshotProgress(tracker.progress());
    let failure: AgentFailure | undefined;
    const supervised = options.exitFile === undefined ? undefined : readSupervisedExit(options.exitFile);
    if (supervised?.stream_error) teeError = supervised.stream_error;
    if (supervised?.spawn_error) {
      failure = {
        kind: "spawn_error",
        retryable: false,
        retryWithoutLearnings: false,
        message: `Could not start ${commandLine.file}: ${supervised.spawn_error}`,
        evidence: "spawn",
      };
    } else if (spawnError && pid === undefined) {
      failure = {
        kind: "spawn_error",
        retryable: false,
        retryWithoutLearnings: false,
        message: `Could not start ${commandLine.file}: ${spawnError.message}`,
        evidence: "spawn",
      };
    } else {
      // An ACP agent that answered its prompt was ended by the runner: how it exited says nothing.
      const answered = acp && result !== undefined;
      failure = classifyFailure({
        exitCode: answered ? 0 : code,
        signal: answered ? null : signal,
        cancelled,
        cancelReason,
        timedOut,
        result,
        progress,
        stderrTail,
        expectsResult: adapter.expectsResult,
        ...(budgetStop ? { budgetStop } : {}),
        agent: adapter.agent,
      });
    }
    const git = trackGit ? await gitProgress(options.cwd, startSha).catch(() => undefined) : undefined;
    const gstackResult =
      progress.gstackResultLine === undefined ? undefined : parseGstackResultLine(progress.gstackResultLine);
    const endedAt = new Date();
    reportProgress(true);
    return {
      agent: adapter.agent,
      exitCode: code,
      signal,
      cancelled,
      cancelReason,
      timedOut,
      startedAt: startedAt.toISOString(),
      endedAt: endedAt.toISOString(),
      durationMs: endedAt.getTime() - startedAt.getTime(),
      progress,
      result,
      ...(gstackResult ? { gstackResult } : {}),
      failure,
      git,
      startSha,
      stderrTail,
      ...(outputTail.length > 0 ? { outputTail: outputTail.toString("utf8") } : {}),
      streamFile: options.streamFile
        ? {
            path: options.streamFile,
            bytes: teeBytes,
            truncated: teeTruncated,
            ...(teeError ? { error: teeError } : {}),
          }
        : undefined,
    };
  })();

  return {
    pid,
    startSha,
    startedAt,
    done,
    async cancel(reason?: string) {
      if (!cancelled && !timedOut && !leaderExited) {
        cancelled = true;
        cancelReason = reason;
      }
      await stopTurn();
      await done;
    },
    ended: () => leaderExited,
    progress() {
      tracker.account({ skippedLines: splitter.stats.skippedLines, outputBytes: splitter.stats.bytes });
      return snapshotProgress(tracker.progress());
    },
    gitProgress: () => (trackGit ? gitProgress(options.cwd, startSha) : Promise.resolve(undefined)),
  };
}

/**
 * A readable stdin for the agent: `/dev/null`, or a private temporary file holding `text`. The
 * file is removed at once; the open descriptor keeps it readable for the child.
 */
function openStdin(text: string | undefined): number {
  if (text === undefined) return openSync("/dev/null", "r");
  const folder = mkdtempSync(join(tmpdir(), "agent-runner-stdin-"));
  try {
    const file = join(folder, "prompt.txt");
    writeFileSync(file, text, { mode: 0o600 });
    return openSync(file, "r");
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** A caller's callback must not break the bookkeeping of the run: its errors become warnings. */
function guarded(name: string, callback: () => void): void {
  try {
    callback();
  } catch (error) {
    process.emitWarning(
      `startAgent ${name} callback threw: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

function delay(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds).unref());
}
