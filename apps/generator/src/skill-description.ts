import { GeneratorError } from "./generator-error";

/** OpenClaw's documentation asks for descriptions under this length. */
export const DESCRIPTION_TARGET = 160;
/** The strict validator's hard limit. */
export const DESCRIPTION_LIMIT = 1024;

/**
 * Turns a gstack description (often a multi-line YAML block) into one line OpenClaw's
 * strict validator accepts: whitespace collapsed, no `<` or `>`, and as many whole
 * sentences as stay under {@link DESCRIPTION_TARGET} characters. A first sentence longer than
 * that is cut at a word boundary and ends in an ellipsis.
 */
export function oneLineDescription(raw: unknown, file: string, rewrite: (text: string) => string): string {
  if (typeof raw !== "string" || raw.trim() === "") {
    throw new GeneratorError({
      code: "description",
      file,
      message: "frontmatter field 'description' is missing or empty; OpenClaw skips such skills",
    });
  }
  const flat = rewrite(raw.replace(/\s+/g, " ").trim())
    .replace(/<-+>|<=+>/g, "↔")
    .replace(/-+>|=+>/g, "→")
    .replace(/<-+|<=+/g, "←")
    .replace(/<([^<>]*)>/g, "$1")
    .replace(/[<>]/g, "")
    .replace(/\s+/g, " ")
    .trim();
  if (flat === "") {
    throw new GeneratorError({
      code: "description",
      file,
      message: "frontmatter field 'description' is empty once angle brackets are removed",
    });
  }
  const maximum = DESCRIPTION_TARGET - 1;
  if (flat.length <= maximum) return flat;
  const sentences = flat.split(/(?<=[.!?])\s+/);
  let kept = "";
  for (const sentence of sentences) {
    const next = kept === "" ? sentence : `${kept} ${sentence}`;
    if (next.length > maximum) break;
    kept = next;
  }
  if (kept !== "") return kept;
  const cut = flat.slice(0, maximum - 1);
  const boundary = cut.lastIndexOf(" ");
  return `${(boundary > 40 ? cut.slice(0, boundary) : cut).replace(/[\s,;:.-]+$/, "")}…`;
}
