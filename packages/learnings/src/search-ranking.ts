/** Splits a query into lower-case tokens on whitespace, as gstack's search does. */
export function queryTokens(query: string): string[] {
  return [
    ...new Set(
      query
        .toLowerCase()
        .split(/\s+/)
        .filter((token) => token !== ""),
    ),
  ];
}

/** How many distinct query tokens occur in any of the texts (0 when none). */
export function matchCount(tokens: readonly string[], texts: readonly string[]): number {
  if (tokens.length === 0) return 0;
  const haystacks = texts.map((text) => text.toLowerCase());
  let count = 0;
  for (const token of tokens) if (haystacks.some((haystack) => haystack.includes(token))) count++;
  return count;
}

/** Something that can be ranked: relevance, then confidence, then recency. */
export interface Rankable {
  score: number;
  confidence: number;
  /** Milliseconds since the epoch, or NaN when unknown. */
  time: number;
}

/**
 * Orders results: more query tokens matched first, then higher (decayed) confidence, then
 * newer. Unknown times sort last.
 */
export function compareRank(left: Rankable, right: Rankable): number {
  if (right.score !== left.score) return right.score - left.score;
  if (right.confidence !== left.confidence) return right.confidence - left.confidence;
  const leftTime = Number.isNaN(left.time) ? Number.NEGATIVE_INFINITY : left.time;
  const rightTime = Number.isNaN(right.time) ? Number.NEGATIVE_INFINITY : right.time;
  return rightTime > leftTime ? 1 : rightTime < leftTime ? -1 : 0;
}
