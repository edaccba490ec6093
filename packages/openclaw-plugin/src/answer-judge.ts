/**
 * Whether the agent's answer to a report is worth a second message to the person, who was
 * already sent the report in plain words. The agent is asked to answer NO_REPLY unless it has
 * something to add; this is the check that holds when it does not: an answer that is silent,
 * or whose sentences the person's message already says, is not sent.
 */

/** OpenClaw's word for "nothing to send", alone (edge punctuation and quotes aside). */
const SILENT = /^NO_REPLY$/;

export function isSilentAnswer(answer: string): boolean {
  const bare = answer.trim().replace(/^[\s"'`*_.,!?:;()[\]]+|[\s"'`*_.,!?:;()[\]]+$/g, "");
  return bare.length === 0 || SILENT.test(bare) || bare === "HEARTBEAT_OK";
}

/** Lower-case words of letters and digits, in order. */
export function words(text: string): string[] {
  return text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Runs of three words, as strings. */
function triples(list: readonly string[]): string[] {
  const runs: string[] = [];
  for (let index = 0; index + 3 <= list.length; index++) runs.push(list.slice(index, index + 3).join(" "));
  return runs;
}

/** Below this share of its three-word runs found in the person's message, an answer adds news. */
export const REPEAT_SHARE = 0.5;

/**
 * "silent" for NO_REPLY, nothing, or an acknowledgement of one or two words ("Done.", "Noted");
 * "repeat" when at least half of the answer's three-word runs (words in order, case and
 * punctuation aside) are in the message the person got; otherwise "adds".
 */
export function judgeAnswer(answer: string, news: string): "silent" | "repeat" | "adds" {
  if (isSilentAnswer(answer)) return "silent";
  const runs = triples(words(answer));
  if (runs.length === 0) return "silent";
  const known = new Set(triples(words(news)));
  const found = runs.filter((run) => known.has(run)).length;
  return found / runs.length >= REPEAT_SHARE ? "repeat" : "adds";
}
