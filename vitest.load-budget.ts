import { availableParallelism, loadavg } from "node:os";

// Wait budgets for tests, shared by every package (the test timeouts in vitest.shared.ts and a
// test's own waits for readiness), so a loaded machine gets more time and an idle one fails fast.

/**
 * How many times slower than an idle machine this one may run now: the higher of the 1- and
 * 5-minute load averages per core, never below 1 (a two-core machine at load 8 gives 4). Tests
 * wait for readiness; this only decides how long a wait may take before it is a failure.
 */
export function loadFactor(averages: readonly number[] = loadavg(), cores = availableParallelism()): number {
  const [oneMinute = 0, fiveMinutes = 0] = averages;
  return Math.max(1, Math.max(oneMinute, fiveMinutes) / cores);
}

/** The time allowed for work that takes at most `idleMs` on an idle machine, grown by the load now. */
export function loadBudget(idleMs: number): number {
  return Math.ceil(idleMs * loadFactor());
}

/**
 * Polls `check` until it returns a value other than undefined. The budget is asked again on
 * every poll, so a machine that gets busier while the test waits gives the wait more time; when
 * it runs out, the error names what was awaited, for how long, and the last thing seen.
 */
export async function waitUntil<T>(
  check: () => Promise<T | undefined> | T | undefined,
  options: { idleMs: number; what: string; lastSeen?: () => string },
): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    const waited = Date.now() - started;
    if (waited > loadBudget(options.idleMs)) {
      const seen = options.lastSeen ? `; last seen: ${options.lastSeen()}` : "";
      throw new Error(
        `${options.what}: not reached after ${waited} ms (load factor ${loadFactor().toFixed(1)})${seen}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
