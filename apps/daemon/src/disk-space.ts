import { rm } from "node:fs/promises";
import { writeFileAtomic } from "@gstack/contracts";

/** True for an error that says the disk (or the user's quota) is full. */
export function isDiskFull(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

/**
 * The disk-full state of the daemon. A write that fails for space does not fail the dispatch:
 * the runner notes it here, puts the dispatch back where it was (first in line) and launches
 * nothing while the disk is full; finishing waits here for room and then carries on. A probe
 * (a small file written and removed) runs every `probeMs`; when it succeeds the state ends and
 * `onRoom` resumes the work, with no restart.
 */
export class DiskSpace {
  /** Set while the disk is full. */
  full?: { since: Date };
  private waiters: Array<() => void> = [];
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly options: {
      probePath: string;
      now(): Date;
      log(line: string): void;
      onRoom(): void;
      probeMs?: number;
    },
  ) {}

  /** Records that a write failed for space (what failed, for the log), and starts probing. */
  noteFull(what: string, error: unknown): void {
    if (this.full) return;
    this.full = { since: this.options.now() };
    this.options.log(
      `disk full: ${what} failed (${(error as NodeJS.ErrnoException).code}); nothing new starts until there is room again`,
    );
    this.probeSoon();
  }

  /** Resolves true once the disk has room (at once when it is not known to be full); false once stopped. */
  waitForRoom(): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    if (!this.full) return Promise.resolve(true);
    return new Promise((resolve) => this.waiters.push(() => resolve(!this.stopped)));
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  private probeSoon(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.probe(), this.options.probeMs ?? 1000);
    this.timer.unref();
  }

  private async probe(): Promise<void> {
    try {
      // Room for more than a state file: resuming into a disk with a few bytes free would only fill it again.
      await writeFileAtomic(this.options.probePath, Buffer.alloc(64 * 1024), { mode: 0o600 });
      await rm(this.options.probePath, { force: true });
    } catch (error) {
      await rm(this.options.probePath, { force: true }).catch(() => undefined);
      if (!isDiskFull(error)) this.options.log(`disk probe: ${(error as Error).message}`);
      this.probeSoon();
      return;
    }
    const since = this.full?.since;
    this.full = undefined;
    this.options.log(`disk has room again (full since ${since?.toISOString()}): resuming`);
    for (const resolve of this.waiters.splice(0)) resolve();
    this.options.onRoom();
  }
}
