import { compareText } from "./compare-text";
import { lineCounter } from "./line-of";
import { type MarkdownStructure, parseMarkdownStructure } from "./markdown-structure";

/** A Claude-only reference left in generated output, with why it was left. */
export interface ClaudeReference {
  /** 1-based line in the generated SKILL.md. */
  line: number;
  /** The text that matched. */
  text: string;
  /** Which construct it is, e.g. `AskUserQuestion`, `~/.claude path`. */
  construct: string;
  /** Where it sits: prose, inline code or a code block. */
  context: "prose" | "inline-code" | "code-block" | "html";
  /** Why the generator could not map it. */
  reason: string;
}

interface Detector {
  construct: string;
  pattern: RegExp;
  /** Reason when found in prose; code blocks get a reason of their own. */
  reason: string;
}

const UNMATCHED = "no rewriting rule covers this phrasing";

/**
 * gstack's `bin/` helpers that skills tell the agent to run. On Claude Code gstack puts
 * them on the PATH; on OpenClaw they are only reachable by their path beside the pack.
 */
export const GSTACK_HELPERS: readonly string[] = [
  "artifacts-init",
  "brain-sync",
  "config",
  "decision-log",
  "decision-search",
  "developer-profile",
  "learnings-log",
  "learnings-search",
  "paths",
  "question-log",
  "question-preference",
  "repo-mode",
  "review-log",
  "review-read",
  "slug",
  "team-init",
  "timeline-log",
];

const detectors: Detector[] = [
  { construct: "AskUserQuestion", pattern: /\bAskUserQuestion\b/g, reason: UNMATCHED },
  { construct: "plan mode", pattern: /\b(ExitPlanMode|EnterPlanMode)\b|\bplan mode\b/gi, reason: UNMATCHED },
  {
    construct: "Claude tool name",
    pattern:
      /\b(Skill|Agent|Task|Read|Write|Edit|MultiEdit|Bash|Grep|Glob|WebSearch|WebFetch|NotebookEdit|TodoWrite) tool\b|\b(TodoWrite|NotebookEdit|MultiEdit|WebSearch|WebFetch)\b/g,
    reason: UNMATCHED,
  },
  { construct: "CLAUDE.md", pattern: /\bCLAUDE\.md\b/g, reason: UNMATCHED },
  {
    construct: "~/.claude path",
    pattern: /(~|\$HOME|\$\{HOME\})\/\.claude\b[^\s`"')]*/g,
    reason: "Claude Code's own files (settings, plans, projects) have no OpenClaw counterpart",
  },
  {
    construct: ".claude folder",
    pattern: /(?<![A-Za-z0-9_])(?<!(?:~|\$HOME|\$\{HOME\})\/)\.claude\/[^\s`"')]*/g,
    reason: "a project's .claude folder is Claude Code configuration with no OpenClaw counterpart",
  },
  { construct: "Claude Code", pattern: /\bClaude Code\b/g, reason: UNMATCHED },
  {
    construct: "CLAUDE_PLUGIN_DATA",
    pattern: /\bCLAUDE_PLUGIN_DATA\b/g,
    reason: "set only when gstack runs as a Claude Code plugin; harmless on OpenClaw, where it is unset",
  },
  {
    construct: "CLAUDE_SKILL_DIR",
    pattern: /\bCLAUDE_SKILL_DIR\b/g,
    reason: "set by Claude Code while a skill runs; OpenClaw does not set it",
  },
  {
    construct: "subagent_type",
    pattern: /\bsubagent_type\b/g,
    reason: "Claude Code's sub-agent types have no sessions_spawn counterpart",
  },
  {
    construct: "Claude Code hook",
    pattern: /\b(?:PreToolUse|PostToolUse|UserPromptSubmit|SessionStart|SubagentStop)\b|\bStop hook\b/g,
    reason: "Claude Code hooks do not run on OpenClaw, so whatever they do does not happen",
  },
  {
    construct: "tool_use",
    pattern: /\btool_use(?:_id)?\b/g,
    reason: "a Claude API content block; an OpenClaw agent asks and answers in its chat reply",
  },
  {
    construct: "Claude as the agent",
    pattern: /\bClaude(?:'s)? (?:[A-Za-z-]+ )?sub-?agents?\b|\bClaude and Codex\b/g,
    reason: "names Claude as the agent running the skill; on OpenClaw it is whatever model the agent uses",
  },
  {
    construct: "run_in_background",
    pattern: /\brun_in_background\b/g,
    reason: "a parameter of Claude Code's Agent tool; sessions_spawn has none",
  },
  {
    construct: "gstack helper without a path",
    pattern: new RegExp(`(?<![\\w/.-])gstack-(?:${GSTACK_HELPERS.join("|")})(?![\\w-])`, "g"),
    reason: "gstack's helpers are not on the PATH on OpenClaw; the skill must name the helper's path",
  },
  {
    construct: "MCP tool",
    pattern: /\bmcp__[A-Za-z0-9_]+/g,
    reason: "names a Claude Code MCP tool; OpenClaw exposes MCP servers under its own tool names",
  },
];

/**
 * True when the match sits in a sentence telling another agent to stay out of Claude
 * Code's folders ("Do NOT read or execute any files under ~/.claude/…"): true as written.
 */
function isWarningAboutClaudeFiles(markdown: string, offset: number): boolean {
  const lineStart = markdown.lastIndexOf("\n", offset - 1) + 1;
  const lineEnd = markdown.indexOf("\n", offset);
  const line = markdown.slice(lineStart, lineEnd === -1 ? markdown.length : lineEnd);
  return /\bDo NOT read or execute any files under ~\/\.claude\//.test(line);
}

const CODE_REASON = "inside a code block, which is copied as written so commands keep working";

/**
 * Finds every Claude-only reference in a generated skill, each with its line, where it sits
 * and why it was left. A clean transform returns an empty list.
 */
export function findClaudeReferences(
  markdown: string,
  structure: MarkdownStructure = parseMarkdownStructure(markdown),
): ClaudeReference[] {
  const { spans } = structure;
  const contextAt = (offset: number): ClaudeReference["context"] => {
    const span = spans.find((candidate) => offset >= candidate.start && offset < candidate.end);
    if (!span) return "prose";
    return span.kind === "fence" ? "code-block" : span.kind;
  };
  const found: ClaudeReference[] = [];
  const lineAt = lineCounter(markdown);
  for (const detector of detectors) {
    for (const match of markdown.matchAll(detector.pattern)) {
      const offset = match.index ?? 0;
      if (isWarningAboutClaudeFiles(markdown, offset)) continue;
      const context = contextAt(offset);
      found.push({
        line: lineAt(offset),
        text: match[0],
        construct: detector.construct,
        context,
        reason: context === "code-block" && detector.reason === UNMATCHED ? CODE_REASON : detector.reason,
      });
    }
  }
  return found.sort((left, right) => left.line - right.line || compareText(left.construct, right.construct));
}
