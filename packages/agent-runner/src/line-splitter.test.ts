import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { LineSplitter } from "./line-splitter";

function splitAll(chunks: Buffer[], maxLineLength?: number) {
  const splitter = new LineSplitter({ maxLineLength });
  const lines: string[] = [];
  for (const chunk of chunks) splitter.push(chunk, (line) => lines.push(line));
  splitter.end((line) => lines.push(line));
  return { lines, stats: splitter.stats };
}

function cut(buffer: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((point) => point % (buffer.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let previous = 0;
  for (const point of points) {
    chunks.push(buffer.subarray(previous, point));
    previous = point;
  }
  chunks.push(buffer.subarray(previous));
  return chunks;
}

describe("LineSplitter", () => {
  it("returns the same lines however the bytes are chunked (multi-byte characters included)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: "grapheme" }).map((line) => line.replace(/[\r\n]/g, ""))),
        fc.array(fc.nat()),
        (lines, cuts) => {
          const text = lines.map((line) => `${line}\n`).join("");
          const { lines: out, stats } = splitAll(cut(Buffer.from(text, "utf8"), cuts));
          expect(out).toEqual(lines);
          expect(stats.skippedLines).toBe(0);
        },
      ),
    );
  });

  it("hands out a last line without a newline and strips CRLF endings", () => {
    expect(splitAll([Buffer.from("a\r\nb")]).lines).toEqual(["a", "b"]);
  });

  it("skips and counts over-long lines without buffering them, and keeps the lines around them", () => {
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 20 }), fc.array(fc.nat()), (cap, cuts) => {
        const long = "x".repeat(cap + 1 + (cuts.length % 7));
        const text = `ok\n${long}\n${"y".repeat(cap)}\n${long}`;
        const splitter = new LineSplitter({ maxLineLength: cap });
        const lines: string[] = [];
        let peak = 0;
        for (const chunk of cut(Buffer.from(text), cuts)) {
          splitter.push(chunk, (line) => lines.push(line));
          peak = Math.max(peak, splitter.bufferedLength);
        }
        splitter.end((line) => lines.push(line));
        expect(lines).toEqual(["ok", "y".repeat(cap)]);
        expect(splitter.stats.skippedLines).toBe(2);
        expect(peak).toBeLessThanOrEqual(cap);
      }),
    );
  });
});
