import { type Handoff, RESUME_PROMPT_MAX } from "@gstack/contracts";

/** A part of a generated prompt: a label and its text (empty parts are left out). */
export interface PromptPart {
  label?: string;
  text: string | undefined;
}

const ELLIPSIS = "…";

/**
 * Builds a prompt from parts within `limit` characters. When the parts do not fit, the
 * longest parts are shortened first (each keeps its beginning and ends in "…") and a last
 * line says the prompt was shortened and where the full text is. Only generated prompts
 * are shortened; a resume prompt someone wrote is never cut. Pure.
 */
export function composePrompt(
  head: string,
  parts: readonly PromptPart[],
  options: { limit?: number; fullTextAt?: string } = {},
): { prompt: string; shortened: boolean } {
  const limit = options.limit ?? RESUME_PROMPT_MAX;
  const present = parts
    .map((part) => ({ label: part.label, text: (part.text ?? "").trim() }))
    .filter((part) => part.text.length > 0);
  const render = (texts: string[]) =>
    [
      head,
      ...present.map((part, index) => (part.label ? `${part.label}:\n${texts[index]}` : texts[index]!)),
    ].join("\n\n");
  const full = render(present.map((part) => part.text));
  if (full.length <= limit) return { prompt: full, shortened: false };

  const note = `\n\n(Shortened to fit ${limit} characters${options.fullTextAt ? `; the full text is in ${options.fullTextAt}` : ""}.)`;
  const fixed = render(present.map(() => "")).length + note.length;
  let budget = Math.max(0, limit - fixed);
  const lengths = present.map((part) => part.text.length);
  const allowed = new Array<number>(lengths.length).fill(0);
  // Share the budget fairly: short parts keep all their text, long parts split the rest.
  const order = lengths
    .map((length, index) => ({ length, index }))
    .sort((left, right) => left.length - right.length);
  let remaining = order.length;
  for (const { length, index } of order) {
    const share = Math.floor(budget / remaining);
    allowed[index] = Math.min(length, share);
    budget -= allowed[index]!;
    remaining--;
  }
  const texts = present.map((part, index) => {
    const keep = allowed[index]!;
    if (keep >= part.text.length) return part.text;
    if (keep <= ELLIPSIS.length) return ELLIPSIS.slice(0, keep);
    return `${part.text.slice(0, keep - ELLIPSIS.length).trimEnd()}${ELLIPSIS}`;
  });
  return { prompt: `${render(texts)}${note}`.slice(0, limit), shortened: true };
}

/**
 * The prompt that resumes a handoff: its own `resume_prompt` when it has one, otherwise
 * one generated from Context, State and What I need (shortened to fit when needed).
 */
export function resumePromptOf(handoff: Handoff): { prompt: string; generated: boolean; shortened: boolean } {
  if (handoff.resume_prompt !== undefined && handoff.resume_prompt.trim() !== "") {
    return { prompt: handoff.resume_prompt, generated: false, shortened: false };
  }
  const where = [`project ${handoff.project}`, handoff.branch ? `branch ${handoff.branch}` : undefined]
    .filter(Boolean)
    .join(", ");
  const head = `Continue the work handed over from ${handoff.from} (${where}${handoff.project_dir ? ` in ${handoff.project_dir}` : ""}).`;
  const { prompt, shortened } = composePrompt(
    head,
    [
      { label: "Context", text: handoff.context },
      { label: "State", text: handoff.state },
      { label: "What is needed", text: handoff.what_i_need },
    ],
    { ...(handoff.source ? { fullTextAt: handoff.source } : {}) },
  );
  return { prompt, generated: true, shortened };
}
