import { StringDecoder } from "node:string_decoder";

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
  /** Longest line kept, in characters (UTF-16 code units, without the newline). Default 8 Mi. */
  maxLineLength?: number;
}

/**
 * Splits a byte stream into lines incrementally. Memory stays bounded by `maxLineLength` whatever
 * the input: a line that grows past the cap is dropped, counted, and skipped up to its newline.
 * Bytes are decoded as UTF-8 with a streaming decoder, so a character split across chunks is
 * never damaged.
 */
export class LineSplitter {
  readonly maxLineLength: number;
  readonly stats: LineSplitterStats = { lines: 0, skippedLines: 0, bytes: 0 };
  #decoder = new StringDecoder("utf8");
  #pending = "";
  #skipping = false;

  constructor(options: LineSplitterOptions = {}) {
    this.maxLineLength = options.maxLineLength ?? 8 * 1024 * 1024;
  }

  /** Characters held for an unfinished line; never more than `maxLineLength`. */
  get bufferedLength(): number {
    return this.#pending.length;
  }

  /** Feeds a chunk; calls `onLine` for each complete line (without `\n` or a trailing `\r`). */
  push(chunk: Buffer, onLine: (line: string) => void): void {
    this.stats.bytes += chunk.length;
    this.#text(this.#decoder.write(chunk), onLine);
  }

  /** Hands out a last line that had no newline. */
  end(onLine: (line: string) => void): void {
    this.#text(this.#decoder.end(), onLine);
    if (this.#skipping) {
      this.#skipping = false;
      return;
    }
    if (this.#pending.length === 0) return;
    const line = this.#pending;
    this.#pending = "";
    this.#emit(line, onLine);
  }

  #text(text: string, onLine: (line: string) => void): void {
    let start = 0;
    while (start < text.length) {
      const end = text.indexOf("\n", start);
      if (end === -1) {
        this.#keep(start === 0 ? text : text.slice(start));
        return;
      }
      if (this.#skipping) {
        this.#skipping = false;
      } else if (this.#pending.length + (end - start) > this.maxLineLength) {
        this.#pending = "";
        this.stats.skippedLines += 1;
      } else {
        const piece = text.slice(start, end);
        const line = this.#pending.length === 0 ? piece : this.#pending + piece;
        this.#pending = "";
        this.#emit(line, onLine);
      }
      start = end + 1;
    }
  }

  #keep(piece: string): void {
    if (this.#skipping || piece.length === 0) return;
    if (this.#pending.length + piece.length > this.maxLineLength) {
      this.#pending = "";
      this.stats.skippedLines += 1;
      this.#skipping = true;
      return;
    }
    this.#pending += piece;
  }

  #emit(line: string, onLine: (line: string) => void): void {
    this.stats.lines += 1;
    onLine(line.endsWith("\r") ? line.slice(0, -1) : line);
  }
}
