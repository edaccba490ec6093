import { type ChildProcess, spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import {
  type Client,
  ClientSideConnection,
  type InitializeResponse,
  ndJsonStream,
  PROTOCOL_VERSION,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionModeState,
} from "@agentclientprotocol/sdk";
import { type AcpPermissionPolicy, decidePermission } from "./acp-permissions";
import type { AcpTracker } from "./acp-tracker";
import { signalProcessGroup, stopProcessGroup } from "./process-group";

/** One ACP prompt turn over an agent's stdio. */
export interface AcpTurnOptions {
  /** The agent's stdin. */
  input: WritableStream<Uint8Array>;
  /** The agent's stdout. */
  output: ReadableStream<Uint8Array>;
  cwd: string;
  prompt: string;
  policy: AcpPermissionPolicy;
  tracker: AcpTracker;
  /** A session of an earlier run to continue with `session/load`, when the agent can load sessions. */
  loadSessionId?: string;
  /** A line for the run's log: permission answers, a session that could not be loaded. */
  log?: (line: string) => void;
}

/** What the turn found out about the agent. */
export interface AcpTurnState {
  initialize?: InitializeResponse;
  sessionId?: string;
  /** True when an earlier session was loaded rather than a new one opened. */
  loaded: boolean;
  /** The mode set for plan mode, when the agent offers a read-only one. */
  planMode?: string;
  /** The error that ended the turn, when it did not end with an answer. */
  error?: unknown;
}

/** Mode ids agents use for "look, change nothing". */
const readOnlyModes = /^(plan|read[-_ ]?only|ask)$/i;

function readOnlyMode(modes: SessionModeState | null | undefined): string | undefined {
  return modes?.availableModes.find((mode) => readOnlyModes.test(mode.id))?.id;
}

/**
 * Drives an Agent Client Protocol agent through one task with the protocol's client library:
 * `initialize` (the client offers no file system or terminal of its own, so the agent uses its
 * own tools, under its permission requests), `session/load` of an earlier session when one is
 * given and the agent advertises `loadSession`, otherwise `session/new` in the working directory,
 * the agent's read-only mode in plan mode, then `session/prompt`. Permission requests are
 * answered by the dispatch's policy and every refusal is recorded with its reason. Session
 * updates are read by the tracker from the agent's output itself, so nothing is counted twice.
 */
export class AcpTurn {
  readonly state: AcpTurnState = { loaded: false };
  readonly #options: AcpTurnOptions;
  readonly #connection: ClientSideConnection;
  #cancelRequested = false;

  constructor(options: AcpTurnOptions) {
    this.#options = options;
    const client: Client = {
      requestPermission: (params) => this.#permission(params),
      // The tracker reads every update from the output stream as it arrives.
      sessionUpdate: () => undefined,
    };
    this.#connection = new ClientSideConnection(() => client, ndJsonStream(options.input, options.output));
  }

  /** Runs the turn; settles when the prompt is answered or the connection ends. Never rejects. */
  async run(): Promise<AcpTurnState> {
    const { cwd, prompt, tracker, loadSessionId, policy } = this.#options;
    try {
      const initialize = await this.#connection.initialize({
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      });
      this.state.initialize = initialize;
      let modes: SessionModeState | null | undefined;
      if (loadSessionId !== undefined && initialize.agentCapabilities?.loadSession === true) {
        try {
          const loaded = await this.#connection.loadSession({
            sessionId: loadSessionId,
            cwd,
            mcpServers: [],
          });
          modes = loaded.modes;
          this.state.sessionId = loadSessionId;
          this.state.loaded = true;
          this.#options.log?.(`loaded session ${loadSessionId}: the agent continues it`);
        } catch (error) {
          this.#options.log?.(
            `could not load session ${loadSessionId} (${describeError(error)}); starting a new one`,
          );
        }
      }
      if (this.state.sessionId === undefined) {
        const opened = await this.#connection.newSession({ cwd, mcpServers: [] });
        modes = opened.modes;
        this.state.sessionId = opened.sessionId;
      }
      // The history a loaded session replays is not this run's work.
      tracker.startTurn(this.state.sessionId);
      if (policy.planOnly) {
        const mode = readOnlyMode(modes);
        if (mode !== undefined) {
          await this.#connection.setSessionMode({ sessionId: this.state.sessionId, modeId: mode });
          this.state.planMode = mode;
          this.#options.log?.(`plan mode: the agent's read-only mode ${mode} is set`);
        }
      }
      if (this.#cancelRequested) return this.state;
      await this.#connection.prompt({
        sessionId: this.state.sessionId,
        prompt: [{ type: "text", text: prompt }],
      });
    } catch (error) {
      this.state.error = error;
    }
    return this.state;
  }

  /** Sends `session/cancel`; the agent then ends its turn with `stopReason: "cancelled"`. */
  async cancel(): Promise<void> {
    this.#cancelRequested = true;
    const { sessionId } = this.state;
    if (sessionId === undefined) return;
    await this.#connection.cancel({ sessionId }).catch(() => undefined);
  }

  /** The connection is closed (the agent's output ended). */
  get closed(): Promise<void> {
    return this.#connection.closed;
  }

  #permission(params: RequestPermissionRequest): RequestPermissionResponse {
    if (this.#cancelRequested) return { outcome: { outcome: "cancelled" } };
    // A request may leave out the kind its tool call was announced with (the update has it).
    const kind = params.toolCall.kind ?? this.#options.tracker.toolKind(params.toolCall.toolCallId);
    const decision = decidePermission(
      { ...params, toolCall: { ...params.toolCall, ...(kind ? { kind } : {}) } },
      this.#options.policy,
    );
    this.#options.log?.(
      `permission ${decision.allow ? "granted" : "refused"}: ${decision.action} (${decision.reason})`,
    );
    if (!decision.allow) {
      this.#options.tracker.refused({
        toolCallId: params.toolCall.toolCallId,
        action: decision.action,
        reason: decision.reason,
      });
    }
    return decision.optionId === undefined
      ? { outcome: { outcome: "cancelled" } }
      : { outcome: { outcome: "selected", optionId: decision.optionId } };
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error !== null && typeof error === "object" && "message" in error) return String(error.message);
  return String(error);
}

/** What an ACP agent said to `initialize`, or why it did not. */
export type AcpProbe =
  | { ok: true; protocolVersion: number; name?: string; version?: string; loadSession: boolean }
  | { ok: false; error: string };

/**
 * Starts an ACP agent from its command line, in a process group of its own, asks it to
 * `initialize` and stops the whole group again: whether the agent starts and speaks the protocol.
 * Never rejects; a program that is missing, exits, or gives no answer within `timeoutMs`
 * (default 30 s) is a failed probe saying why.
 */
export async function probeAcpAgent(options: {
  command: readonly string[];
  cwd: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}): Promise<AcpProbe> {
  const [program, ...args] = options.command;
  if (program === undefined) return { ok: false, error: "the command is empty" };
  let child: ChildProcess;
  try {
    child = spawn(program, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
  } catch (error) {
    return { ok: false, error: `could not start ${program}: ${(error as Error).message}` };
  }
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-2000);
  });
  child.stdin?.on("error", () => undefined);
  const failed = new Promise<AcpProbe>((resolve) => {
    child.once("error", (error) =>
      resolve({ ok: false, error: `could not start ${program}: ${error.message}` }),
    );
    // "exit" can come before the last of stderr is read; "close" comes after both pipes closed.
    // Whatever the program left in its group would hold them open, and goes at once.
    child.once("exit", () => {
      try {
        if (child.pid !== undefined) signalProcessGroup(child.pid, "SIGKILL");
      } catch {
        // a group member this user may not signal keeps the pipes; the time limit still holds
      }
    });
    child.once("close", (code, signal) => {
      const why = signal ? `signal ${signal}` : `code ${code}`;
      const said = stderr.trim().split("\n").at(-1);
      resolve({
        ok: false,
        error: `${program} exited with ${why} before answering${said ? `: ${said}` : ""}`,
      });
    });
  });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<AcpProbe>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          ok: false,
          error: `${program} did not answer initialize within ${options.timeoutMs ?? 30_000} ms`,
        }),
      options.timeoutMs ?? 30_000,
    );
  });
  try {
    if (!child.stdin || !child.stdout) return { ok: false, error: `could not start ${program}` };
    const connection = new ClientSideConnection(
      () => ({
        requestPermission: () => ({ outcome: { outcome: "cancelled" } }),
        sessionUpdate: () => undefined,
      }),
      ndJsonStream(
        Writable.toWeb(child.stdin) as WritableStream<Uint8Array>,
        Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
      ),
    );
    const answered = connection
      .initialize({
        protocolVersion: PROTOCOL_VERSION,
        clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
      })
      .then(
        (response): AcpProbe => ({
          ok: true,
          protocolVersion: response.protocolVersion,
          ...(response.agentInfo?.name ? { name: response.agentInfo.name } : {}),
          ...(response.agentInfo?.version ? { version: response.agentInfo.version } : {}),
          loadSession: response.agentCapabilities?.loadSession === true,
        }),
        // A closed connection usually means the program ended: its exit says more, if it comes.
        async (error: unknown): Promise<AcpProbe> =>
          (await Promise.race([failed, pause(2_000)])) ?? {
            ok: false,
            error: `initialize failed: ${describeError(error)}`,
          },
      );
    return await Promise.race([answered, failed, timedOut]);
  } finally {
    if (timer) clearTimeout(timer);
    child.stdin?.end();
    if (child.pid !== undefined) await stopProcessGroup(child.pid, { graceMilliseconds: 2_000 });
  }
}

function pause(milliseconds: number): Promise<undefined> {
  return new Promise((resolve) => setTimeout(() => resolve(undefined), milliseconds).unref());
}
