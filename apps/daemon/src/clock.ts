/**
 * The daemon's two clocks. The wall clock (`now`, a `Date`) stamps what people read and what
 * must survive a restart; the monotonic clock (`monotonicMs`) measures waits and durations
 * while the daemon runs, so moving the system clock neither expires nor delays anything by
 * itself. Both are seams for tests.
 */
export interface MonotonicClock {
  monotonicMs?: () => number;
}

/** Milliseconds on the monotonic clock of `clock`, or the process's own. */
export function monotonicNow(clock: MonotonicClock): number {
  return clock.monotonicMs ? clock.monotonicMs() : performance.now();
}

/**
 * Watches the wall clock against the monotonic one: {@link ClockWatch.jumpMs} says how far the
 * wall clock moved beyond the time that passed since `mark` (positive: forward), or 0 when
 * within `toleranceMs`.
 */
export class ClockWatch {
  private wall: number;
  private mono: number;

  constructor(
    private readonly now: () => Date,
    private readonly monotonicMs: () => number,
    private readonly toleranceMs = 60_000,
  ) {
    this.wall = now().getTime();
    this.mono = monotonicMs();
  }

  jumpMs(): number {
    const jump = this.now().getTime() - this.wall - (this.monotonicMs() - this.mono);
    return Math.abs(jump) > this.toleranceMs ? jump : 0;
  }
}

/** "about 2 hours forward", "about 45 minutes back": a jump for people. */
export function describeJump(jumpMs: number): string {
  const minutes = Math.round(Math.abs(jumpMs) / 60_000);
  const size =
    minutes >= 120 ? `${Math.round(minutes / 60)} hours` : minutes === 1 ? "1 minute" : `${minutes} minutes`;
  return `about ${size} ${jumpMs > 0 ? "forward" : "back"}`;
}
