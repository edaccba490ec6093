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
  const withoutStrings = line.replace(/'[^']*'|"(?:[^"\\$]|\\.)*"/g, '""');
  const withoutComment = withoutStrings.replace(/(^|\s)#.*$/, "");
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

/** Which programs a skill runs, split by whether it can run without them. */
export interface SkillBins {
  /** Run unconditionally in a shell block: the skill cannot work without them (`requires.bins`). */
  required: string[];
  /**
   * Mentioned in inline code, guarded (`command -v x`, `which x`, `type x`) or run with a
   * fallback (`x … || …`, `x … 2>/dev/null`): the skill may use them but works without.
   * Never a gate, since OpenClaw hides a skill whose `requires.bins` are missing.
   */
  optional: string[];
}

const GUARD = /\b(?:command\s+-v|which|type|hash)\s+([A-Za-z0-9_.-]+)/g;

/** True when a shell line tolerates the command failing or being absent. */
function hasFallback(line: string): boolean {
  return /\|\||2>\s*\/dev\/null/.test(line);
}

/**
 * Infers the binaries a skill runs. Only programs at command position in shell blocks,
 * run without a guard or fallback, are required; inline code in prose is a mention, and a
 * program the skill checks for first is optional. gstack's browse binary (`$B`) is never
 * required: it lives beside the pack, not on the PATH, and the skill's setup block finds it.
 */
export function inferBins(
  markdown: string,
  structure: MarkdownStructure = parseMarkdownStructure(markdown),
): SkillBins {
  const required = new Set<string>();
  const optional = new Set<string>();
  const guarded = new Set<string>();
  const shellLines: string[] = [];
  for (const span of structure.spans) {
    if (span.kind === "html") continue;
    if (span.kind === "fence" && !SHELL_LANGS.has(span.value.toLowerCase())) continue;
    const text = markdown.slice(span.start, span.end);
    if (span.kind === "inline-code") {
      for (const command of commandsOf(text.replace(/^`+|`+$/g, ""))) {
        if (notableBins.has(command)) optional.add(command);
      }
      continue;
    }
    const joined = text.split("\n").slice(1, -1).join("\n").replace(/\\\n/g, " ");
    for (const line of joined.split("\n")) {
      shellLines.push(line);
      for (const match of line.matchAll(GUARD)) guarded.add(match[1] ?? "");
    }
  }
  for (const line of shellLines) {
    for (const command of commandsOf(line)) {
      if (!notableBins.has(command)) continue;
      if (guarded.has(command) || hasFallback(line)) optional.add(command);
      else required.add(command);
    }
  }
  for (const command of required) optional.delete(command);
  return { required: [...required].sort(), optional: [...optional].sort() };
}

/** The binaries a skill cannot run without: {@link inferBins}'s `required`. */
export function inferRequiredBins(
  markdown: string,
  structure: MarkdownStructure = parseMarkdownStructure(markdown),
): string[] {
  return inferBins(markdown, structure).required;
}
