import { type ChildProcess, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import {
  type AgentFailure,
  type AgentRunResult,
  buildClaudeArgs,
  ClaudeStreamTracker,
  classifyFailure,
  LineSplitter,
  RUN_MARKER_VARIABLE,
  type RunTrace,
  sampleRunDescendants,
  snapshotProgress,
  stopProcessGroup,
  stopRunLeftovers,
} from "@gstack/agent-runner";
import {
  type ClaudeTurn,
  type ClaudeTurnOptions,
  type ClaudeTurnReader,
  claudeTurnReader,
} from "./claude-turn";

/** How a kept Claude Code process is started: one OpenClaw session, one Claude Code session. */
export type KeptClaudeOptions = Pick<
  ClaudeTurnOptions,
  "binary" | "cwd" | "resumeSessionId" | "sessionKey" | "env" | "allowedTools" | "disallowedTools"
> & {
  /** Between SIGTERM and SIGKILL when stopping, and how long an interrupted turn may take to end. */
  killGraceMs?: number;
};

/** One turn given to a kept process. */
export type KeptTurnOptions = Pick<
  ClaudeTurnOptions,
  "prompt" | "timeoutMs" | "onText" | "onToolUse" | "onSessionId"
>;

interface TurnState {
  tracker: ClaudeStreamTracker;
  reader: ClaudeTurnReader;
  startedAt: Date;
  cancelled: boolean;
  cancelReason?: string;
  timedOut: boolean;
  timer?: NodeJS.Timeout;
  finished: boolean;
  finish(ending: { exitCode: number | null; signal: NodeJS.Signals | null }): void;
  done: Promise<Awaited<ClaudeTurn["done"]>>;
}

const stderrTailBytes = 16 * 1024;
type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null;
const delay = (milliseconds: number) =>
  new Promise<void>((resolve) => setTimeout(resolve, milliseconds).unref());

/**
 * A Claude Code process kept between turns: `--input-format stream-json`, each turn one user
 * message on its stdin, read until that turn's `result` event. The same permission mode, tool
 * grants and bans as a single turn (the agent runner's arguments, never a permission bypass), its
 * own process group, and the run marker the agent runner uses, so what it leaves is found and
 * stopped with it. A turn is interrupted with Claude Code's `interrupt` control request; when the
 * turn has not ended within the grace, the process is stopped.
 */
export class KeptClaude {
  readonly pid: number | undefined;
  readonly sessionKey: string;
  readonly cwd: string;
  /** Settles once the process and whatever it left are gone. */
  readonly ended: Promise<void>;
  #sessionId: string | undefined;
  readonly #child: ChildProcess;
  readonly #splitter = new LineSplitter();
  readonly #killGraceMs: number;
  #turn: TurnState | undefined;
  #stderrTail = "";
  #exited = false;
  #stopping: Promise<void> | undefined;
  #turns = 0;
  #costSoFar = 0;

  constructor(options: KeptClaudeOptions) {
    this.sessionKey = options.sessionKey;
    this.cwd = options.cwd;
    this.#sessionId = options.resumeSessionId;
    const grace = options.killGraceMs ?? 2_000;
    this.#killGraceMs = grace;
    const args = buildClaudeArgs({
      prompt: "-",
      promptOnStdin: true,
      allowedTools: options.allowedTools,
      disallowedTools: options.disallowedTools,
      ...(options.resumeSessionId ? { resumeSessionId: options.resumeSessionId } : {}),
      extraArgs: ["--input-format", "stream-json", "--include-partial-messages"],
    });
    const marker = randomUUID();
    const environment: NodeJS.ProcessEnv = { ...process.env };
    for (const [name, value] of Object.entries(options.env)) {
      if (value === undefined) delete environment[name];
      else environment[name] = value;
    }
    environment.OPENCLAW_SESSION = options.sessionKey;
    environment[RUN_MARKER_VARIABLE] = marker;
    const child = spawn(options.binary, args, {
      cwd: options.cwd,
      env: environment,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    this.#child = child;
    this.pid = child.pid;
    child.stdin?.on("error", () => undefined);
    child.stdout?.on("data", (chunk: Buffer) => this.#splitter.push(chunk, (line) => this.#line(line)));
    child.stderr?.on("data", (chunk: Buffer) => {
      this.#stderrTail = (this.#stderrTail + chunk.toString("utf8")).slice(-stderrTailBytes);
    });
    const trace: RunTrace | undefined =
      child.pid === undefined
        ? undefined
        : { sessionId: child.pid, marker: `${RUN_MARKER_VARIABLE}=${marker}` };
    const sampler = trace ? setInterval(() => sampleRunDescendants(trace), 1_000) : undefined;
    sampler?.unref();
    const outputClosed = new Promise<void>((resolve) => child.once("close", () => resolve()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.once("error", (error) => {
        this.#stderrTail = `${this.#stderrTail}\nCould not start ${options.binary}: ${error.message}`;
        if (child.pid === undefined) resolve({ code: null, signal: null });
      });
      child.once("exit", (code, signal) => resolve({ code, signal }));
    });
    this.ended = (async () => {
      const { code, signal } = await exited;
      this.#exited = true;
      if (sampler) clearInterval(sampler);
      if (child.pid !== undefined) {
        await stopProcessGroup(child.pid, { graceMilliseconds: grace });
        if (trace) await stopRunLeftovers(trace, { graceMilliseconds: grace });
        await Promise.race([outputClosed, delay(2_000)]);
      }
      this.#splitter.end((line) => this.#line(line));
      this.#turn?.finish({ exitCode: code ?? (signal ? null : 1), signal });
    })();
  }

  /** The Claude Code session the process is in (known at start when resuming, else from its first turn). */
  get sessionId(): string | undefined {
    return this.#sessionId;
  }

  /** Turns it has answered or ended. */
  get turns(): number {
    return this.#turns;
  }

  /** Whether it can take a turn: running and not being stopped. */
  alive(): boolean {
    return !this.#exited && this.#stopping === undefined && this.pid !== undefined;
  }

  busy(): boolean {
    return this.#turn !== undefined;
  }

  /** Gives the process its next user message and follows the turn until Claude Code's `result`. */
  turn(options: KeptTurnOptions): ClaudeTurn {
    if (this.#turn) throw new Error(`the Claude Code process of ${this.sessionKey} is in a turn already`);
    let settle: (value: Awaited<ClaudeTurn["done"]>) => void = () => undefined;
    const state: TurnState = {
      tracker: new ClaudeStreamTracker(),
      reader: claudeTurnReader(options),
      startedAt: new Date(),
      cancelled: false,
      timedOut: false,
      finished: false,
      done: new Promise((resolve) => {
        settle = resolve;
      }),
      finish: (ending) => {
        if (state.finished) return;
        state.finished = true;
        if (state.timer) clearTimeout(state.timer);
        if (this.#turn === state) this.#turn = undefined;
        this.#turns += 1;
        const endedAt = new Date();
        const reported = state.tracker.result();
        // Claude Code reports the process's cost so far with each turn's result: this turn's is the difference.
        const result =
          reported?.costUsd === undefined
            ? reported
            : { ...reported, costUsd: Math.max(0, reported.costUsd - this.#costSoFar) };
        if (reported?.costUsd !== undefined) this.#costSoFar = reported.costUsd;
        const progress = snapshotProgress(state.tracker.progress());
        const failure: AgentFailure | undefined =
          this.pid === undefined
            ? {
                kind: "spawn_error",
                retryable: false,
                retryWithoutLearnings: false,
                message: this.#stderrTail.trim() || "Claude Code could not be started.",
                evidence: "spawn",
              }
            : classifyFailure({
                exitCode: ending.exitCode,
                signal: ending.signal,
                cancelled: state.cancelled,
                ...(state.cancelReason ? { cancelReason: state.cancelReason } : {}),
                timedOut: state.timedOut,
                ...(result ? { result } : {}),
                progress,
                stderrTail: this.#stderrTail,
                expectsResult: true,
                agent: "claude",
              });
        const run: AgentRunResult = {
          agent: "claude",
          exitCode: ending.exitCode,
          signal: ending.signal,
          cancelled: state.cancelled,
          ...(state.cancelReason ? { cancelReason: state.cancelReason } : {}),
          timedOut: state.timedOut,
          startedAt: state.startedAt.toISOString(),
          endedAt: endedAt.toISOString(),
          durationMs: endedAt.getTime() - state.startedAt.getTime(),
          progress,
          ...(result ? { result } : {}),
          ...(failure ? { failure } : {}),
          stderrTail: this.#stderrTail,
        };
        const usage = state.reader.usage();
        settle({ run, ...(usage ? { usage } : {}), streamedText: state.reader.streamedText() });
      },
    };
    this.#turn = state;
    if (!this.alive()) {
      // Gone before the turn could be given: the turn ends as the process did.
      void this.ended.then(() => state.finish({ exitCode: this.#child.exitCode ?? 1, signal: null }));
    } else {
      this.#write({
        type: "user",
        message: { role: "user", content: options.prompt },
        parent_tool_use_id: null,
        session_id: this.#sessionId ?? "",
      });
      state.timer = setTimeout(() => {
        if (state.finished || state.cancelled) return;
        state.timedOut = true;
        void this.#interrupt(state);
      }, options.timeoutMs);
      state.timer.unref();
    }
    return {
      pid: this.pid,
      done: state.done,
      cancel: async (reason) => {
        if (!state.finished && !state.cancelled && !state.timedOut) {
          state.cancelled = true;
          state.cancelReason = reason;
        }
        await this.#interrupt(state);
        await state.done;
      },
    };
  }

  /** Stops the process with its whole group and whatever it left; a running turn ends with it. */
  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#child.stdin?.end();
      if (this.pid !== undefined && !this.#exited)
        await stopProcessGroup(this.pid, { graceMilliseconds: this.#killGraceMs });
      await this.ended;
    })();
    return this.#stopping;
  }

  /** Asks Claude Code to end the turn; stops the process when the turn has not ended within the grace. */
  async #interrupt(state: TurnState): Promise<void> {
    if (state.finished) return;
    this.#write({ type: "control_request", request_id: randomUUID(), request: { subtype: "interrupt" } });
    await Promise.race([state.done, delay(this.#killGraceMs)]);
    if (!state.finished) await this.stop();
  }

  #write(message: Json): void {
    if (this.#exited || this.#child.stdin?.writable !== true) return;
    this.#child.stdin.write(`${JSON.stringify(message)}\n`);
  }

  #line(line: string): void {
    const state = this.#turn;
    if (!state) return;
    const event = state.tracker.line(line);
    if (!isObject(event)) return;
    if (event.type === "system" && event.subtype === "init" && typeof event.session_id === "string")
      this.#sessionId = event.session_id;
    try {
      state.reader.onEvent(event);
    } catch (error) {
      process.emitWarning(`contractor: reading a Claude Code event failed: ${String(error)}`);
    }
    if (event.type === "result") {
      state.finish({ exitCode: state.tracker.result()?.isError === true ? 1 : 0, signal: null });
    }
  }
}

/** What a pool tells its owner about the processes it keeps (to record them on disk). */
export interface ClaudePoolHooks {
  started(sessionKey: string, pid: number): Promise<void>;
  stopped(sessionKey: string, pid: number): Promise<void>;
}

interface PoolEntry {
  claude: KeptClaude;
  idle?: NodeJS.Timeout;
}

/**
 * The kept Claude Code processes of one sidecar handler, at most one per OpenClaw session and
 * never shared between sessions. A process is kept for `idleMs` after a turn and then stopped;
 * a turn for another Claude Code session (a reset, a new project folder, a session Claude Code
 * lost) stops the session's process and starts a new one; so does a process that has ended.
 */
export class ClaudePool {
  readonly #kept = new Map<string, PoolEntry>();
  /** Sessions whose process is being stopped, until it is gone. */
  readonly #stopping = new Map<string, Promise<void>>();
  #retiring = false;

  constructor(
    readonly idleMs: number,
    readonly hooks: ClaudePoolHooks,
    readonly killGraceMs = 2_000,
  ) {}

  /** Starts a turn on the session's kept process, starting (or replacing) it when needed. */
  async turn(process: KeptClaudeOptions, turn: KeptTurnOptions): Promise<ClaudeTurn> {
    const key = process.sessionKey;
    let entry = this.#kept.get(key);
    if (entry) {
      if (entry.idle) clearTimeout(entry.idle);
      entry.idle = undefined;
      const same =
        entry.claude.alive() &&
        !entry.claude.busy() &&
        process.resumeSessionId !== undefined &&
        entry.claude.sessionId === process.resumeSessionId &&
        entry.claude.cwd === process.cwd;
      if (!same) {
        await this.#stop(key, entry);
        entry = undefined;
      }
    }
    // A process of this session still being stopped (its idle time ran out just now) is gone first.
    while (!entry && this.#stopping.has(key)) await this.#stopping.get(key);
    if (!entry) {
      const claude = new KeptClaude({ ...process, killGraceMs: this.killGraceMs });
      const created: PoolEntry = { claude };
      entry = created;
      this.#kept.set(key, created);
      if (claude.pid !== undefined) await this.hooks.started(key, claude.pid);
      // A process that ends by itself between turns is forgotten at once.
      void claude.ended.then(() => {
        if (this.#kept.get(key) === created && !claude.busy()) void this.#stop(key, created);
      });
    }
    const kept = entry;
    const started = kept.claude.turn(turn);
    const done = started.done.then(async (outcome) => {
      if (this.#kept.get(key) === kept) {
        if (this.#retiring || !kept.claude.alive()) await this.#stop(key, kept);
        else {
          kept.idle = setTimeout(() => {
            if (!kept.claude.busy()) void this.#stop(key, kept);
          }, this.idleMs);
          kept.idle.unref();
        }
      }
      return outcome;
    });
    return { pid: started.pid, done, cancel: started.cancel };
  }

  /** Process ids of every kept process. */
  pids(): number[] {
    return [...this.#kept.values()].flatMap((entry) =>
      entry.claude.pid === undefined ? [] : [entry.claude.pid],
    );
  }

  /** The kept process of a session, if there is one. */
  processOf(sessionKey: string): KeptClaude | undefined {
    return this.#kept.get(sessionKey)?.claude;
  }

  /**
   * From now on a process is stopped as soon as its turn ends (a settings reload: new turns go to
   * another pool); the processes between turns are stopped now.
   */
  async retire(): Promise<void> {
    this.#retiring = true;
    await Promise.all(
      [...this.#kept.entries()].flatMap(([key, entry]) =>
        entry.claude.busy() ? [] : [this.#stop(key, entry)],
      ),
    );
  }

  /** Stops every kept process (a turn running in one ends with it). */
  async stopAll(): Promise<void> {
    this.#retiring = true;
    await Promise.all([...this.#kept.entries()].map(([key, entry]) => this.#stop(key, entry)));
  }

  async #stop(key: string, entry: PoolEntry): Promise<void> {
    if (entry.idle) clearTimeout(entry.idle);
    entry.idle = undefined;
    if (this.#kept.get(key) === entry) this.#kept.delete(key);
    const stopping = (async () => {
      await entry.claude.stop();
      if (entry.claude.pid !== undefined) await this.hooks.stopped(key, entry.claude.pid);
    })();
    this.#stopping.set(key, stopping);
    try {
      await stopping;
    } finally {
      if (this.#stopping.get(key) === stopping) this.#stopping.delete(key);
    }
  }
}
