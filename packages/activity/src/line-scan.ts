/** One line of a text, with its 1-based number. */
export interface ScannedLine {
  text: string;
  line: number;
}

/**
 * Yields the non-blank lines of a JSON Lines text that may hold every one of `needles`
 * (their JSON-escaped forms), plus every line containing a backslash, which is always
 * passed on because escapes can hide a value. With no needles it yields every non-blank
 * line. Instead of visiting each line it jumps from one occurrence of the first needle (or
 * of a backslash) to the next, so a selective filter over a large file costs little more
 * than reading it.
 */
export function* scanLines(text: string, needles: readonly string[] = []): Generator<ScannedLine> {
  if (needles.length === 0) {
    let start = 0;
    let line = 0;
    while (start < text.length) {
      let end = text.indexOf("\n", start);
      if (end === -1) end = text.length;
      line += 1;
      const raw = text.slice(start, end);
      if (raw.trim() !== "") yield { text: raw, line };
      start = end + 1;
    }
    return;
  }
  const [first, ...rest] = needles as [string, ...string[]];
  let counted = 0;
  let countedLine = 1;
  const lineAt = (position: number) => {
    for (
      let index = text.indexOf("\n", counted);
      index !== -1 && index < position;
      index = text.indexOf("\n", index + 1)
    ) {
      countedLine += 1;
      counted = index + 1;
    }
    if (counted < position) counted = position;
    return countedLine;
  };
  let position = 0;
  let nextNeedle = text.indexOf(first, position);
  let nextEscape = text.indexOf("\\", position);
  while (nextNeedle !== -1 || nextEscape !== -1) {
    const hit =
      nextNeedle === -1 ? nextEscape : nextEscape === -1 ? nextNeedle : Math.min(nextNeedle, nextEscape);
    const start = text.lastIndexOf("\n", hit - 1) + 1;
    let end = text.indexOf("\n", hit);
    if (end === -1) end = text.length;
    const raw = text.slice(start, end);
    if (raw.includes("\\") || rest.every((needle) => raw.includes(needle))) {
      yield { text: raw, line: lineAt(start) };
    }
    position = end + 1;
    if (nextNeedle !== -1 && nextNeedle < position) nextNeedle = text.indexOf(first, position);
    if (nextEscape !== -1 && nextEscape < position) nextEscape = text.indexOf("\\", position);
  }
}
