import { applyEdits, parseMarkdownStructure, type TextEdit } from "./markdown-structure";

/** Names of Claude Code's hook events and what only they produce. */
const HOOK_TALK = /\b(?:PreToolUse|PostToolUse|UserPromptSubmit|SubagentStop)\b|\btool_use_id\b/;
const HOOK_PARENTHESIS =
  /\s*\((?:[^()]|\([^()]*\))*\b(?:PreToolUse|PostToolUse|tool_use_id)\b(?:[^()]|\([^()]*\))*\)/g;
const SENTENCE_BREAK = /(?<=[.!?])\s+(?=[A-Z`*"(])/;

/**
 * Removes what a skill says about Claude Code hooks (PreToolUse, PostToolUse…), which
 * never run on OpenClaw: a parenthesis that mentions one, else the sentence, else the
 * paragraph or list item. What the skill asks the agent itself to do is kept.
 */
export function dropHookSentences(body: string): string {
  if (!HOOK_TALK.test(body)) return body;
  const { blocks } = parseMarkdownStructure(body);
  const edits: TextEdit[] = [];
  for (const block of blocks) {
    if (block.type !== "paragraph" && block.type !== "list-item") continue;
    const text = body.slice(block.start, block.end);
    if (!HOOK_TALK.test(text)) continue;
    const withoutParenthesis = text.replace(HOOK_PARENTHESIS, "");
    const kept = withoutParenthesis
      .split(SENTENCE_BREAK)
      .filter((sentence) => !HOOK_TALK.test(sentence))
      .join(" ");
    if (block.type === "list-item" && !/[A-Za-z]/.test(kept.replace(/^\s*(?:[-*+]|\d+[.)])\s*/, ""))) {
      let end = body.indexOf("\n", block.end);
      end = end === -1 ? body.length : end + 1;
      edits.push({ start: body.lastIndexOf("\n", block.start - 1) + 1, end, replacement: "" });
      continue;
    }
    edits.push({ start: block.start, end: block.end, replacement: kept });
  }
  return applyEdits(body, edits);
}
