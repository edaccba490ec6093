import { parseDocument } from "yaml";
import { GeneratorError } from "./generator-error";

/** A SKILL.md split into its YAML frontmatter and its Markdown body. */
export interface SkillDocument {
  /** Parsed frontmatter; an empty object when the file has none. */
  frontmatter: Record<string, unknown>;
  /** Everything after the closing `---` line. */
  body: string;
  /** Number of lines before the body starts, to turn body lines into file lines. */
  bodyLineOffset: number;
  /** False when the file does not open with a `---` frontmatter block. */
  hasFrontmatter: boolean;
}

const OPENING = /^---[ \t]*\r?\n/;
const CLOSING = /^---[ \t]*$/m;

/**
 * Splits a SKILL.md into frontmatter and body. The frontmatter must open the file with
 * `---`; a YAML error names the file and the line.
 */
export function parseSkillDocument(source: string, file: string): SkillDocument {
  const text = source.replace(/^\uFEFF/, "").replace(/\r\n/g, "\n");
  if (!OPENING.test(text)) return { frontmatter: {}, body: text, bodyLineOffset: 0, hasFrontmatter: false };
  const afterOpening = text.indexOf("\n") + 1;
  const rest = text.slice(afterOpening);
  const closing = CLOSING.exec(rest);
  if (!closing) {
    throw new GeneratorError({
      code: "frontmatter",
      file,
      line: 1,
      message: "frontmatter opened with --- is never closed by a --- line",
    });
  }
  const yamlText = rest.slice(0, closing.index);
  const bodyStart = afterOpening + closing.index + closing[0].length + 1;
  const document = parseDocument(yamlText, { schema: "core", prettyErrors: false });
  const firstError = document.errors[0];
  if (firstError) {
    const line = (firstError.linePos?.[0]?.line ?? 0) + 1;
    throw new GeneratorError({
      code: "frontmatter",
      file,
      line,
      message: `frontmatter is not valid YAML: ${firstError.message.split("\n")[0]}`,
    });
  }
  const value: unknown = document.toJS();
  if (value !== null && value !== undefined && (typeof value !== "object" || Array.isArray(value))) {
    throw new GeneratorError({
      code: "frontmatter",
      file,
      line: 2,
      message: "frontmatter must be a mapping",
    });
  }
  const frontmatter = (value ?? {}) as Record<string, unknown>;
  // YAML reads `name: 1e21` as a number; a name is the text as written.
  const nameNode = document.get("name", true) as { range?: [number, number, number] } | undefined;
  if (frontmatter["name"] !== undefined && typeof frontmatter["name"] !== "string" && nameNode?.range) {
    frontmatter["name"] = yamlText.slice(nameNode.range[0], nameNode.range[1]).trim();
  }
  const body = bodyStart > text.length ? "" : text.slice(bodyStart);
  const bodyLineOffset = text.slice(0, Math.min(bodyStart, text.length)).split("\n").length - 1;
  return { frontmatter, body, bodyLineOffset, hasFrontmatter: true };
}
