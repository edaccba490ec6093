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
