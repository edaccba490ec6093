/** What a tool hands back to OpenClaw: text for the model, the structured value in details. */
export interface ToolAnswer {
  content: { type: "text"; text: string }[];
  details: Record<string, unknown>;
}

/**
 * A successful answer: `text` is what the model reads. OpenClaw shows the model a JSON copy
 * of `details` beside the text, so details keep only short plain values (ids, counts, flags,
 * paths): lists and objects are already said in the text and are left out.
 */
export function answer(text: string, details: Record<string, unknown> = {}): ToolAnswer {
  return { content: [{ type: "text", text }], details: { ok: true, ...plainDetails(details) } };
}

/** The fields of `details` that are short plain values. */
export function plainDetails(details: Record<string, unknown>): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) {
    const plain =
      typeof value === "number" ||
      typeof value === "boolean" ||
      (typeof value === "string" && value.length <= 300);
    if (plain) kept[key] = value;
  }
  return kept;
}

/** A refusal or failure as one sentence the model can act on; never a stack trace. */
export function failure(sentence: string, details: Record<string, unknown> = {}): ToolAnswer {
  return {
    content: [{ type: "text", text: sentence }],
    details: { ok: false, ...plainDetails(details) },
  };
}

/** The first line of an error's message, for errors that are not ours to phrase. */
export function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? message).trim();
}
