import { type FSWatcher, statSync, watch } from "node:fs";
import { stat } from "node:fs/promises";

/** What a {@link DirectoryWatch} tells its owner. */
export interface DirectoryWatchHandlers {
  /** A name in the folder changed: created, renamed in or out, written or removed. */
  onName(name: string): void;
  /** Something changed but the system did not say what: look at the whole folder. */
  onUnknown(): void;
  /** The watch failed and is closed; {@link DirectoryWatch.ensure} opens it again. */
  onError(error: Error): void;
}

/**
 * Follows one folder (not its subfolders) with the system's own notifications and hands on
 * each name an event is about, without reading the folder or looking at the file. The owner
 * decides what a name means, so a busy folder (the daemon's `dispatch/`, where it also writes
 * its audit log and queue) or a large one (`dispatch/completed/`, which keeps every report)
 * costs one call per event, not a fresh listing of every entry in it. Events may repeat or
 * arrive for names already gone; the owner takes them as hints and scans the folder at start
 * and on its own schedule, since a system may drop events under load.
 */
export class DirectoryWatch {
  private watcher?: FSWatcher;
  /** The folder watched, as device, inode and birth time: a folder made again is another one. */
  private identity?: string;
  private closed = false;

  constructor(
    readonly folder: string,
    private readonly handlers: DirectoryWatchHandlers,
  ) {}

  /** True while the folder is being watched. */
  get watching(): boolean {
    return this.watcher !== undefined;
  }

  /**
   * Opens the watch again when it failed or when the folder at this path is no longer the one
   * watched (removed and made again, which ends a watch without an error). Returns true when it
   * (re)opened one. Throws like {@link ensure}.
   */
  async renew(): Promise<boolean> {
    if (this.closed) return false;
    if (this.watcher) {
      const info = await stat(this.folder).catch(() => undefined);
      if (info && `${info.dev}:${info.ino}:${info.birthtimeMs}` === this.identity) return false;
      this.watcher.close();
      this.watcher = undefined;
    }
    this.ensure();
    return true;
  }

  /**
   * Starts watching, or starts again after an error. Events for names that appear from the
   * moment this returns are delivered; earlier names are the owner's to scan. Throws when the
   * folder cannot be watched (missing, or the system's watch limit reached).
   */
  ensure(): void {
    if (this.closed || this.watcher) return;
    const info = statSync(this.folder);
    const watcher = watch(this.folder, (_event, name) => {
      if (this.watcher !== watcher) return;
      if (typeof name === "string" && name.length > 0) this.handlers.onName(name);
      else this.handlers.onUnknown();
    });
    watcher.on("error", (error) => {
      if (this.watcher === watcher) this.watcher = undefined;
      watcher.close();
      this.handlers.onError(error);
    });
    this.watcher = watcher;
    this.identity = `${info.dev}:${info.ino}:${info.birthtimeMs}`;
  }

  /** Stops watching for good. */
  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.watcher = undefined;
  }
}
