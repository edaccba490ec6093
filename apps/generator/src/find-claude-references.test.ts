import { describe, expect, it } from "vitest";
import { findClaudeReferences } from "./find-claude-references";
import { transformSkill } from "./transform-skill";

const options = {
  skillNames: new Set<string>(),
  skillsRoot: "~/.openclaw/workspace/skills",
  homepage: "https://example.com",
  license: "MIT",
};

describe("findClaudeReferences", () => {
  it("finds what no rule maps, with its line, its context and the reason", () => {
    const markdown = [
      "Settings live in ~/.claude/settings.json.",
      "",
      "```text",
      "Example reply: AskUserQuestion(...)",
      "```",
      "",
      "Pass `subagent_type` and call mcp__github__create_issue.",
      "",
    ].join("\n");
    expect(findClaudeReferences(markdown)).toEqual([
      {
        line: 1,
        text: "~/.claude/settings.json.",
        construct: "~/.claude path",
        context: "prose",
        reason: expect.stringContaining("no OpenClaw counterpart"),
      },
      {
        line: 4,
        text: "AskUserQuestion",
        construct: "AskUserQuestion",
        context: "code-block",
        reason: expect.stringContaining("copied as written"),
      },
      {
        line: 7,
        text: "mcp__github__create_issue",
        construct: "MCP tool",
        context: "prose",
        reason: expect.any(String),
      },
      {
        line: 7,
        text: "subagent_type",
        construct: "subagent_type",
        context: "inline-code",
        reason: expect.any(String),
      },
    ]);
  });

  it("reports leftovers of a transformed skill at their line in the generated file", () => {
    const source = [
      "---",
      "name: odd",
      "description: A skill with things no rule maps.",
      "---",
      "",
      "## Step 1",
      "",
      "Keep notes in ~/.claude/plans/current.md while working.",
      "",
      "```bash",
      'echo "AskUserQuestion is a Claude tool"',
      "```",
      "",
    ].join("\n");
    const skill = transformSkill({ gstackName: "odd", file: "odd/SKILL.md", source }, options);
    const lines = skill.content.split("\n");
    expect(skill.leftovers.map((leftover) => leftover.construct)).toEqual([
      "~/.claude path",
      "AskUserQuestion",
    ]);
    for (const leftover of skill.leftovers) {
      expect(lines[leftover.line - 1]).toContain(leftover.text);
    }
  });

  it("finds hook talk, tool_use, Claude as the agent, run_in_background and helpers without a path", () => {
    const markdown = [
      "The PostToolUse hook logs it (dedup on tool_use_id).",
      "",
      "Fall back to the Claude subagent when Codex fails.",
      "",
      "Pass `run_in_background: false`, then run `gstack-config get proactive`.",
      "",
      "Run `~/.openclaw/workspace/skills/gstack/bin/gstack-config get x` and the gstack-ship skill.",
      "",
    ].join("\n");
    expect(findClaudeReferences(markdown).map((found) => [found.construct, found.text])).toEqual([
      ["Claude Code hook", "PostToolUse"],
      ["tool_use", "tool_use_id"],
      ["Claude as the agent", "Claude subagent"],
      ["gstack helper without a path", "gstack-config"],
      ["run_in_background", "run_in_background"],
    ]);
  });

  it("leaves a warning that keeps another agent out of Claude Code's folders alone", () => {
    expect(
      findClaudeReferences(
        "> Do NOT read or execute any files under ~/.claude/, .claude/skills/ or agents/.\n",
      ),
    ).toEqual([]);
  });
});
