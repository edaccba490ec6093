import type { AwaitingNotice } from "@gstack/contracts";
import { reportMarker } from "./report-outbox";

/** The stable key of one waiting round: a new round after a revision is a new report. */
export function awaitingKey(notice: Pick<AwaitingNotice, "dispatch_id" | "round">): string {
  return `gstack:${notice.dispatch_id}:awaiting:${notice.round}`;
}

/** Where a waiting round is kept in the outbox and the delivered-ledger, beside the completion. */
export function awaitingSlot(notice: Pick<AwaitingNotice, "dispatch_id" | "round">): string {
  return `${notice.dispatch_id}.awaiting-${notice.round}`;
}

const letter = (index: number) => String.fromCharCode(97 + index);

/** The reply token that picks a gate item's option (`d2` and its second option: `d2b`). */
export function optionToken(item: GateItem, at: number): string {
  return `${item.label}${letter(at)}`;
}

/** A gate item's options as the person and the agent read them: `d2a) Redis; d2b) In memory`. */
export function optionList(item: GateItem): string {
  return item.options.map((option, at) => `${optionToken(item, at)}) ${option}`).join("; ");
}

type GateItem = NonNullable<AwaitingNotice["items"]>[number];

/**
 * The recommendation as the token that chooses it (`d2a`), which `all` takes; a recommendation
 * that is none of the item's options is quoted as gstack wrote it.
 */
function recommendationOf(item: GateItem): string {
  if (item.recommended === null) return "no recommendation";
  const at = item.options.indexOf(item.recommended);
  return at >= 0 ? `recommended: ${optionToken(item, at)}` : `recommended: "${item.recommended}"`;
}

/**
 * A token of this gate for the grammar's examples: the first pending decision's second option
 * (`d2b`), so an example copied as it stands names a decision that waits.
 */
export function exampleToken(items: readonly GateItem[]): string {
  const first = items[0];
  if (!first) return "d1b";
  return optionToken(first, Math.min(1, Math.max(0, first.options.length - 1)));
}

/**
 * The text a person and the session's agent read when a dispatch waits: what it waits on (the
 * plan, or the gate's numbered decisions), exactly how to answer with `gstack_answer` (and the
 * command line that does the same), when it ends unanswered, and last the report's key.
 */
export function awaitingMessage(notice: AwaitingNotice): string {
  const id = notice.dispatch_id;
  const where = notice.project ? ` (${notice.project})` : "";
  const round = notice.round > 1 ? `, round ${notice.round}` : "";
  const lines: string[] = [];
  if (notice.kind === "plan") {
    lines.push(
      `gstack dispatch ${id}${where} has a plan and waits for the person's answer${round}. Nothing was changed yet.`,
      "",
      notice.summary.trim() || "(the agent reported no plan text)",
      "",
      "How to answer (only with the person's own answer, never on their behalf):",
      `- approve: gstack_answer with dispatch_id ${id}, answer approve, round ${notice.round}. The agent carries the plan out in the same session and worktree.`,
      `- revise: gstack_answer with dispatch_id ${id}, answer revise, round ${notice.round}, text saying what to change. The agent plans again.`,
      `- reject: gstack_answer with dispatch_id ${id}, answer reject, text saying why. The dispatch ends cancelled.`,
      `The person's plain words: "approve", "yes", "go ahead", "looks good" approve; "revise: …" or "change …" revise with their words; "reject: …" or "stop" reject. A bare "no" is not an answer: ask whether to revise or reject.`,
    );
  } else {
    lines.push(
      `gstack dispatch ${id}${where} stopped at a gstack gate and waits for the person's decisions (gate revision ${notice.round}).`,
      "",
    );
    if (notice.items && notice.items.length > 0) {
      for (const [index, item] of notice.items.entries()) {
        const options = optionList(item);
        const recommended = recommendationOf(item);
        lines.push(`${index + 1}. ${item.label}: ${item.title}. Options: ${options} (${recommended}).`);
      }
    } else lines.push(notice.summary.trim());
    const example = exampleToken(notice.items ?? []);
    lines.push(
      "",
      "How to answer (only with the person's own answer, never on their behalf):",
      `- reply: gstack_answer with dispatch_id ${id}, answer reply, round ${notice.round}, text in gstack's grammar: all (every recommendation), tokens such as ${example} (decision ${example.slice(0, -1)}, option ${example.slice(-1)}), or all except ${example}. A bare yes or no is refused.`,
      `- reject: gstack_answer with dispatch_id ${id}, answer reject, text saying why. The dispatch ends cancelled.`,
      `The person's plain words: "all", "yes to all" or "take the recommendations" reply all; tokens or "all except …" as they wrote them; "reject: …" or "stop" reject.`,
    );
  }
  lines.push(
    `gstack_answer reaches only a gstack daemon on this host; when the daemon runs on another machine, the person answers on that machine: ${notice.how_to_answer}`,
    `Unanswered, it ends cancelled at ${notice.expires_at}. The final report comes here once it has run.`,
    reportMarker(awaitingKey(notice)),
  );
  return lines.join("\n");
}
