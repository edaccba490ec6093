/** Counters a line splitter keeps about what it could not hand out. */
export interface LineSplitterStats {
  /** Complete lines handed out. */
  lines: number;
  /** Lines longer than the cap: dropped, never buffered past the cap. */
  skippedLines: number;
  /** Bytes seen in total. */
  bytes: number;
}

export interface LineSplitterOptions {
  /** Longest line kept, in bytes (without the newline). Default 8 MiB. */
  maxLineBytes?: number;
}

const newline = 0x0a;

/**
 * Splits a byte stream into lines incrementally. Memory stays bounded by `maxLineBytes` whatever
 * the input: a line that grows past the cap is dropped, counted, and skipped up to its newline.
 * Works on bytes so a multi-byte character split across chunks is never damaged.
 */
export class LineSplitter {
  readonly maxLineBytes: number;
  readonly stats: LineSplitterStats = { lines: 0, skippedLines: 0, bytes: 0 };
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #skipping = false;

  constructor(options: LineSplitterOptions = {}) {
    this.maxLineBytes = options.maxLineBytes ?? 8 * 1024 * 1024;
  }

  /** Bytes held for an unfinished line; never more than `maxLineBytes`. */
  get bufferedBytes(): number {
    return this.#pendingBytes;
  }

  /** Feeds a chunk; calls `onLine` for each complete line (without `\n` or a trailing `\r`). */
  push(chunk: Buffer, onLine: (line: string) => void): void {
    this.stats.bytes += chunk.length;
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(newline, start);
      if (end === -1) {
        this.#keep(chunk.subarray(start));
        return;
      }
      if (this.#skipping) {
        this.#skipping = false;
      } else if (this.#pendingBytes + (end - start) > this.maxLineBytes) {
        this.#drop();
      } else {
        const piece = chunk.subarray(start, end);
        const line = this.#pendingBytes === 0 ? piece : Buffer.concat([...this.#pending, piece]);
        this.#pending = [];
        this.#pendingBytes = 0;
        this.#emit(line, onLine);
      }
      start = end + 1;
    }
  }

  /** Hands out a last line that had no newline. */
  end(onLine: (line: string) => void): void {
    if (this.#skipping) {
      this.#skipping = false;
      return;
    }
    if (this.#pendingBytes === 0) return;
    const line = Buffer.concat(this.#pending);
    this.#pending = [];
    this.#pendingBytes = 0;
    this.#emit(line, onLine);
  }

  #keep(piece: Buffer): void {
    if (this.#skipping || piece.length === 0) return;
    if (this.#pendingBytes + piece.length > this.maxLineBytes) {
      this.#drop();
      this.#skipping = true;
      return;
    }
    // Copy: the caller may reuse its chunk buffer.
    this.#pending.push(Buffer.from(piece));
    this.#pendingBytes += piece.length;
  }

  #drop(): void {
    this.#pending = [];
    this.#pendingBytes = 0;
    this.stats.skippedLines += 1;
  }

  #emit(line: Buffer, onLine: (line: string) => void): void {
    const length = line.length > 0 && line[line.length - 1] === 0x0d ? line.length - 1 : line.length;
    this.stats.lines += 1;
    onLine(line.toString("utf8", 0, length));
  }
}
