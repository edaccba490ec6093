/** 1-based line number of `offset` in `text`. */
export function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let index = 0; index < offset && index < text.length; index++) {
    if (text.charCodeAt(index) === 10) line++;
  }
  return line;
}

/**
 * `lineOf` for many offsets in one text: the newlines are found once, and each offset's
 * line is looked up among them.
 */
export function lineCounter(text: string): (offset: number) => number {
  let newlines: number[] | undefined;
  return (offset) => {
    if (newlines === undefined) {
      newlines = [];
      for (let at = text.indexOf("\n"); at !== -1; at = text.indexOf("\n", at + 1)) newlines.push(at);
    }
    // Lines before the offset's: newlines strictly before it (and within the text).
    const limit = Math.min(offset, text.length);
    let low = 0;
    let high = newlines.length;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (newlines[middle]! < limit) low = middle + 1;
      else high = middle;
    }
    return low + 1;
  };
}
