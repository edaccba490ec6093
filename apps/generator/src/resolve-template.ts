import { GeneratorError } from "./generator-error";
import { lineOf } from "./line-of";

/** What a resolver is told about the placeholder it expands. */
export interface ResolverContext {
  /** The arguments after the name: `{{SECTION:intro:short}}` gives `["intro", "short"]`. */
  args: string[];
  /** The skill being generated (its gstack folder name; `""` for the root skill). */
  skill: string;
  /** The template file, as named in messages. */
  file: string;
}

/** Expands one placeholder name to text, which may itself contain placeholders. */
export type Resolver = (context: ResolverContext) => string;

/** Resolvers by placeholder name, e.g. `{ PREAMBLE: () => "…" }`. */
export type ResolverSet = Readonly<Record<string, Resolver>>;

/** gstack's generator stops after this many passes; so does this one. */
export const MAX_TEMPLATE_PASSES = 6;

const PLACEHOLDER = /\{\{([A-Z][A-Z0-9_]*)((?::[^{}:\n]*)*)\}\}/g;
const ANY_PLACEHOLDER = /\{\{[A-Z][A-Z0-9_]*[^{}\s]*\}\}/;

/**
 * Expands a gstack `SKILL.md.tmpl`: every `{{NAME}}` or `{{NAME:arg[:arg]}}` is replaced by
 * its resolver's output, pass after pass (output may hold placeholders too), at most
 * {@link MAX_TEMPLATE_PASSES} times. An unknown name, or a placeholder still present after
 * the last pass, is an error naming the file and the line.
 */
export function resolveTemplate(
  template: string,
  options: { file: string; skill: string; resolvers: ResolverSet },
): string {
  let text = template;
  for (let pass = 1; pass <= MAX_TEMPLATE_PASSES; pass++) {
    let replaced = false;
    text = text.replace(
      PLACEHOLDER,
      (match, name: string, rawArgs: string, offset: number, whole: string) => {
        const resolver = Object.hasOwn(options.resolvers, name) ? options.resolvers[name] : undefined;
        if (!resolver) {
          throw new GeneratorError({
            code: "placeholder",
            file: options.file,
            line: lineOf(whole, offset),
            message: `unknown placeholder ${match}${pass > 1 ? ` (produced by a resolver in pass ${pass - 1})` : ""}; known: ${Object.keys(options.resolvers).sort().join(", ") || "none"}`,
          });
        }
        replaced = true;
        const args = rawArgs === "" ? [] : rawArgs.slice(1).split(":");
        return resolver({ args, skill: options.skill, file: options.file });
      },
    );
    if (!replaced) break;
  }
  const leftover = ANY_PLACEHOLDER.exec(text);
  if (leftover) {
    const known = PLACEHOLDER.test(leftover[0]);
    PLACEHOLDER.lastIndex = 0;
    throw new GeneratorError({
      code: "placeholder",
      file: options.file,
      line: lineOf(text, leftover.index),
      message: known
        ? `placeholder ${leftover[0]} is still present after ${MAX_TEMPLATE_PASSES} passes; a resolver keeps producing placeholders`
        : `malformed placeholder ${leftover[0]}; placeholders look like {{NAME}} or {{NAME:arg}}`,
    });
  }
  return text;
}
