/** A person's answer to a waiting plan, before it is accepted. */
export type AnswerInput =
  | { kind: "approve"; round?: number }
  | { kind: "revise"; feedback: string; round?: number }
  | { kind: "reject"; reason: string; round?: number }
  /** A reply to a gstack gate, in gstack's grammar (`all`, `d3b`, `all except d3b`). */
  | { kind: "reply"; reply: string; round?: number };

/** Why an answer was refused; nothing was written or changed. */
export type AnswerRule =
  | "unknown"
  | "finished"
  | "not_waiting"
  | "already_answered"
  | "stale"
  | "unparseable";

/** An answer refused, with the sentence saying what to send instead. */
export class AnswerRefusal extends Error {
  constructor(
    readonly rule: AnswerRule,
    message: string,
  ) {
    super(message);
    this.name = "AnswerRefusal";
  }
}

/** What a person can send, for messages that say what to send instead. */
export function answerUsage(id: string): string {
  return `gstack-dispatch answer ${id} approve | revise "<what to change>" | reject "<why>"`;
}

/**
 * Reads an answer from its words, as the CLI takes them: `approve`, `revise <feedback…>` or
 * `reject <reason…>` (the words after the first are joined with spaces). A bare yes or no, an
 * unknown word, a revise without feedback or a reject without a reason is refused, naming what
 * to send instead.
 */
export function parseAnswerWords(id: string, words: readonly string[]): AnswerInput {
  const [first, ...rest] = words;
  const text = rest.join(" ").trim();
  const verb = first?.trim().toLowerCase();
  if (verb === "approve" && text === "") return { kind: "approve" };
  if (verb === "revise" && text !== "") return { kind: "revise", feedback: text };
  if (verb === "reject" && text !== "") return { kind: "reject", reason: text };
  // Anything else is a gate reply, checked against the gate it answers; a bare yes or no never is.
  if (verb !== undefined && verb !== "" && !["approve", "revise", "reject", "yes", "no"].includes(verb)) {
    return { kind: "reply", reply: words.join(" ").trim() };
  }
  let why: string;
  if (verb === undefined || verb === "") why = "the answer is empty";
  else if (verb === "approve")
    why = "approve takes no text (to change the plan, send revise with the change)";
  else if (verb === "revise") why = "revise needs the change you want, in words";
  else if (verb === "reject") why = "reject needs a reason";
  else why = `"${first}" is not an answer`;
  throw new AnswerRefusal("unparseable", `${why}; send ${answerUsage(id)}`);
}

/** The words that {@link parseAnswerWords} reads back as `answer`. */
export function answerWords(answer: AnswerInput): string[] {
  if (answer.kind === "approve") return ["approve"];
  if (answer.kind === "reply") return answer.reply.split(" ");
  return [answer.kind, answer.kind === "revise" ? answer.feedback : answer.reason];
}

/** An answer from the service API's fields, checked like the CLI's words. */
export function answerFromRequest(
  id: string,
  request: {
    answer: "approve" | "revise" | "reject" | "reply";
    text?: string | undefined;
    round?: number | undefined;
  },
): AnswerInput {
  if (request.answer === "reply") {
    const reply = request.text?.trim() ?? "";
    if (reply === "") {
      throw new AnswerRefusal(
        "unparseable",
        `a reply needs its text (e.g. all, d3b or all except d3b); send ${answerUsage(id)}`,
      );
    }
    return { kind: "reply", reply, ...(request.round !== undefined ? { round: request.round } : {}) };
  }
  const words = [
    request.answer,
    ...(request.text !== undefined && request.text.trim() !== "" ? [request.text] : []),
  ];
  const parsed = parseAnswerWords(id, words);
  return request.round !== undefined ? { ...parsed, round: request.round } : parsed;
}
