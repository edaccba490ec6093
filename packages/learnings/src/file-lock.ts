import {
  type FileLockOptions,
  LockTimeoutError,
  withFileLock as withContractsFileLock,
} from "@gstack/contracts";
import { LearningsError } from "./errors";

/** How long to wait for a lock and when a held lock counts as abandoned (see `@gstack/contracts`). */
export type LockOptions = FileLockOptions;

/**
 * Runs `task` while holding an exclusive lock file: the lock of `@gstack/contracts`, with a
 * timeout reported as a {@link LearningsError} `lock-timeout` that names the file (and the
 * holder's pid when known).
 */
export async function withFileLock<T>(
  path: string,
  task: () => Promise<T>,
  options: LockOptions = {},
): Promise<T> {
  try {
    return await withContractsFileLock(path, task, options);
  } catch (error) {
    if (!LockTimeoutError.isInstance(error)) throw error;
    const holder = error.holderPid === undefined ? "another sync" : `another sync (pid ${error.holderPid})`;
    throw new LearningsError(
      "lock-timeout",
      `${path}: ${holder} has held this lock for over ${error.timeoutMs} ms`,
      {
        file: path,
        cause: error,
      },
    );
  }
}
