import { applyEdits, parseMarkdownStructure, type TextEdit } from "./markdown-structure";

/** The note a skill gets when its Claude Code hooks, which enforced its rules, are dropped. */
export const UNENFORCED_HOOKS_NOTE =
  "> **Not enforced on OpenClaw:** OpenClaw runs no hook that checks tool calls for this skill, " +
  "so nothing below is refused automatically: you are the check. While the skill is active, look at every " +
  "`edit`, `write` and `exec` call before making it, do not make one that breaks the rule below, " +
  "and tell the user what you did not do and why. This is an instruction to you, not a guarantee.";

/** Prose that explains how the dropped hook works: true on Claude Code only. */
const HOOK_MECHANICS = /\bhook(?:s|Specific\w*)?\b|\bPreToolUse\b|\bpermissionDecision\b/i;

const ENFORCEMENT_CLAIMS: [RegExp, string][] = [
  [/will be \*\*blocked\*\* \(not just warned\)/g, "must be **refused by you** (OpenClaw does not block it)"],
  [/will be \*\*blocked\*\*/g, "must be **refused by you**"],
  [/will be blocked from editing/g, "must not be edited"],
  [/will be blocked/g, "must be refused"],
  [/\bare blocked\b/g, "must be refused"],
  [/\b(B|b)locks (Edit|edit|`edit`)/g, "$1ars $2"],
];

/**
 * For a skill whose Claude Code hooks are dropped: removes the prose that explains the
 * hook's mechanics and turns "will be blocked" into what the agent must do itself. The
 * caller puts {@link UNENFORCED_HOOKS_NOTE} at the top, after the text is rewritten.
 */
export function describeUnenforcedHooks(body: string): string {
  const { blocks } = parseMarkdownStructure(body);
  const edits: TextEdit[] = [];
  for (const block of blocks) {
    if (block.type !== "paragraph") continue;
    if (!HOOK_MECHANICS.test(body.slice(block.start, block.end))) continue;
    let end = body.indexOf("\n", block.end);
    end = end === -1 ? body.length : end + 1;
    edits.push({ start: block.start, end, replacement: "" });
  }
  let text = applyEdits(body, edits);
  for (const [pattern, replacement] of ENFORCEMENT_CLAIMS) text = text.replace(pattern, replacement);
  return text;
}
