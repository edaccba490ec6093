const marker = Symbol.for("@gstack/daemon.DaemonError");

/**
 * A problem the daemon reports to a person and stops on: a missing agent binary, a second
 * daemon, an unreachable callback endpoint, a config file that breaks its contract. The
 * message is one readable sentence; `exitCode` is what the CLI exits with.
 */
export class DaemonError extends Error {
  readonly [marker] = true;
  override readonly name = "DaemonError";
  readonly exitCode: number;

  constructor(message: string, options: { exitCode?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.exitCode = options.exitCode ?? 1;
  }

  /** True for a DaemonError from any copy of this package. */
  static isInstance(value: unknown): value is DaemonError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[marker] === true;
  }
}
