import { type MarkdownStructure, parseMarkdownStructure } from "./markdown-structure";

/**
 * Programs worth declaring in `metadata.openclaw.requires.bins`: what a skill cannot work
 * without and a user may lack. POSIX tools every shell has (ls, sed, grep…) are left out.
 */
export const notableBins: ReadonlySet<string> = new Set([
  "bun",
  "codex",
  "docker",
  "gh",
  "git",
  "jq",
  "node",
  "npm",
  "npx",
  "pnpm",
  "python3",
  "rg",
  "yarn",
]);

/** The name under which gstack's browse binary (`$B`) is declared. */
export const BROWSE_BIN = "browse";

const SHELL_LANGS = new Set(["", "bash", "sh", "shell", "zsh", "console"]);
const PREFIXES = new Set([
  "sudo",
  "command",
  "exec",
  "time",
  "env",
  "nohup",
  "then",
  "do",
  "else",
  "!",
  "xargs",
]);

/** The programs at command position in one line of shell. */
function commandsOf(line: string): string[] {
  const withoutComment = line.replace(/(^|\s)#.*$/, "");
  const pieces = withoutComment.split(/\|\||&&|[|;&`]|\$\(|\(|\{/);
  const commands: string[] = [];
  for (const piece of pieces) {
    const words = piece.trim().split(/\s+/);
    let index = 0;
    while (index < words.length) {
      const word = words[index] ?? "";
      if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(word) || PREFIXES.has(word)) {
        index++;
        continue;
      }
      break;
    }
    const first = words[index];
    if (first) commands.push(first.replace(/^["']|["']$/g, ""));
  }
  return commands;
}

/**
 * Infers the binaries a skill runs: programs at command position in its shell blocks and in
 * inline code that reads as a command, plus the browse binary when `$B` is used.
 */
export function inferRequiredBins(
  markdown: string,
  structure: MarkdownStructure = parseMarkdownStructure(markdown),
): string[] {
  const { spans } = structure;
  const found = new Set<string>();
  for (const span of spans) {
    if (span.kind === "html") continue;
    if (span.kind === "fence" && !SHELL_LANGS.has(span.value.toLowerCase())) continue;
    const text = markdown.slice(span.start, span.end);
    const lines = span.kind === "fence" ? text.split("\n").slice(1, -1) : [text.replace(/^`+|`+$/g, "")];
    for (const line of lines) {
      if (/\$\{?B\b/.test(line)) found.add(BROWSE_BIN);
      for (const command of commandsOf(line)) {
        if (notableBins.has(command)) found.add(command);
      }
    }
  }
  return [...found].sort();
}
