import type { GateItem } from "@gstack/daemon-client";
import { AnswerRefusal } from "./answer";

export type { GateItem } from "@gstack/daemon-client";

/** One choice of a reply: a decision's label and the letter of its option (`d3b`). */
export interface GateChoice {
  label: string;
  option: string;
}

/** A gate reply read: every pending decision with the option it gets. */
export interface GateReply {
  /** The reply as gstack reads it (`all`, `d3b p1a`, `all except d3b`). */
  text: string;
  choices: GateChoice[];
}

/** The letter gstack gives an option by its place: a, b, c, … */
export function optionLetter(index: number): string {
  return String.fromCharCode(97 + index);
}

/** The label of a decision id within its run (`r1-d3` of run `r1` is `d3`). */
export function gateLabel(id: string, run: string | undefined): string {
  return run && id.startsWith(`${run}-`) ? id.slice(run.length + 1) : id;
}

/** What to send instead, naming the pending decisions and their letters. */
export function gateUsage(id: string, items: readonly GateItem[]): string {
  const example = items[0]
    ? `${items[0].label}${optionLetter(Math.min(1, items[0].options.length - 1))}`
    : "d1b";
  return `gstack-dispatch answer ${id} all | ${example} … | all except ${example} (each pending decision: ${items
    .map((item) => `${item.label}=${item.options.map((_, index) => optionLetter(index)).join("/")}`)
    .join(", ")})`;
}

/**
 * Reads a reply in gstack's gate grammar against the pending decisions: `all` takes every
 * recommendation, tokens `<label><letter>` choose options, and `all except <tokens>` takes the
 * recommendations but for the tokens named. A bare yes or no, an unknown token, a decision named
 * twice, a letter past its options, or a decision left without a choice (no token and no
 * recommendation) is refused, with what to send instead; nothing is written before this passes.
 */
export function parseGateReply(dispatchId: string, reply: string, items: readonly GateItem[]): GateReply {
  const refuse = (why: string): never => {
    throw new AnswerRefusal("unparseable", `${why}; send ${gateUsage(dispatchId, items)}`);
  };
  const words = reply.trim().toLowerCase().split(/\s+/).filter(Boolean);
  if (words.length === 0) refuse("the reply is empty");
  if (words.length === 1 && /^(y|yes|n|no|ok|approve|approved)$/.test(words[0] ?? "")) {
    refuse(`a bare "${words[0]}" does not say which options you choose`);
  }
  let takeRecommended = false;
  let tokens = words;
  if (words[0] === "all") {
    takeRecommended = true;
    if (words.length > 1) {
      if (words[1] !== "except" || words.length === 2)
        refuse(`"${reply.trim()}" is not "all" nor "all except <tokens>"`);
      tokens = words.slice(2);
    } else tokens = [];
  }
  const chosen = new Map<string, string>();
  for (const token of tokens) {
    const match = /^([a-z]+[0-9]+)([a-z])$/.exec(token);
    const item = match ? items.find((candidate) => candidate.label.toLowerCase() === match[1]) : undefined;
    if (!match || !item) refuse(`"${token}" names no pending decision`);
    const [, label, letter] = match as RegExpExecArray;
    const index = (letter ?? "a").charCodeAt(0) - 97;
    if (!item || index >= item.options.length)
      refuse(`"${token}": ${label} has options ${item?.options.map((_, i) => optionLetter(i)).join(", ")}`);
    if (chosen.has(item?.label ?? "")) refuse(`${label} is named twice`);
    chosen.set(item?.label ?? "", letter ?? "a");
  }
  const choices: GateChoice[] = [];
  const undecided: string[] = [];
  for (const item of items) {
    const picked = chosen.get(item.label);
    if (picked) {
      choices.push({ label: item.label, option: picked });
      continue;
    }
    const recommended = item.recommended === null ? -1 : item.options.indexOf(item.recommended);
    if (takeRecommended && recommended >= 0)
      choices.push({ label: item.label, option: optionLetter(recommended) });
    else undecided.push(item.label);
  }
  if (undecided.length > 0) {
    refuse(
      takeRecommended
        ? `${undecided.join(", ")} ${undecided.length === 1 ? "has" : "have"} no recommendation to take: choose with all except ${undecided[0]}<letter>`
        : `${undecided.join(", ")} ${undecided.length === 1 ? "is" : "are"} left without a choice`,
    );
  }
  return { text: words.join(" "), choices };
}

/** The reply that chooses exactly `choices`, as tokens (`d3b p1a`). */
export function formatGateReply(choices: readonly GateChoice[]): string {
  return choices.map((choice) => `${choice.label}${choice.option}`).join(" ");
}
