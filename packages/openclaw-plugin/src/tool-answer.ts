/** What a tool hands back to OpenClaw: text for the model, the structured value in details. */
export interface ToolAnswer {
  content: { type: "text"; text: string }[];
  details: Record<string, unknown>;
}

/** A successful answer: `text` is what the model reads. */
export function answer(text: string, details: Record<string, unknown> = {}): ToolAnswer {
  return { content: [{ type: "text", text }], details: { ok: true, ...details } };
}

/** A refusal or failure as one sentence the model can act on; never a stack trace. */
export function failure(sentence: string, details: Record<string, unknown> = {}): ToolAnswer {
  return { content: [{ type: "text", text: sentence }], details: { ok: false, error: sentence, ...details } };
}

/** The first line of an error's message, for errors that are not ours to phrase. */
export function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.split("\n")[0] ?? message).trim();
}
