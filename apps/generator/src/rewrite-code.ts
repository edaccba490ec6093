import type { RewriteContext } from "./rewrite-paths";
import { rewritePaths } from "./rewrite-paths";

const SHELL_LANGS = new Set(["", "bash", "sh", "shell", "zsh", "console"]);
const BROWSE_FALLBACK = `[ -x "$B" ] || B=$(command -v browse 2>/dev/null || printf '%s' "$B")`;

/**
 * Rewrites a fenced code block. Code is copied as written except for paths and file names
 * (see {@link rewritePaths}); a `Read` inside a shell block is a word, not a tool. A shell
 * block that sets `B` to the browse binary also learns to find it on the PATH.
 */
export function rewriteCodeBlock(raw: string, lang: string, context: RewriteContext): string {
  const rewritten = rewritePaths(raw, context);
  if (!SHELL_LANGS.has(lang.toLowerCase()) || rewritten.includes("command -v browse")) return rewritten;
  const lines = rewritten.split("\n");
  let last = -1;
  lines.forEach((line, index) => {
    if (/^(?:\[[^\]]*\]\s*&&\s*)*B=/.test(line) && /browse/.test(line)) last = index;
  });
  if (last === -1) return rewritten;
  lines.splice(last + 1, 0, BROWSE_FALLBACK);
  return lines.join("\n");
}
