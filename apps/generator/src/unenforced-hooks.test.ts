import { describe, expect, it } from "vitest";
import { transformSkill } from "./transform-skill";
import { UNENFORCED_HOOKS_NOTE } from "./unenforced-hooks";

const options = {
  skillNames: new Set(["freeze", "careful"]),
  skillsRoot: "~/.openclaw/workspace/skills",
  homepage: "https://github.com/garrytan/gstack",
  license: "MIT",
};

const FREEZE = `---
name: freeze
description: Restrict file edits to a directory.
hooks:
  PreToolUse:
    - matcher: "Edit"
      hooks:
        - type: command
          command: "bash $HOME/.claude/skills/gstack/freeze/bin/check-freeze.sh"
---
# /freeze

Lock file edits to a directory. Any Edit or Write operation targeting
a file outside the allowed path will be **blocked** (not just warned).

The hook reads \`file_path\` from the tool input and returns a \`hookSpecificOutput\`
payload — Claude Code ignores a top-level decision.

Files outside this path will be blocked from editing.
`;

describe("a skill whose Claude Code hooks are dropped", () => {
  const skill = transformSkill({ gstackName: "freeze", file: "freeze/SKILL.md", source: FREEZE }, options);
  const body = skill.content.slice(skill.content.indexOf("-->") + 4);

  it("says plainly at the top that OpenClaw enforces nothing", () => {
    expect(body.trimStart().startsWith(UNENFORCED_HOOKS_NOTE)).toBe(true);
  });

  it("promises no blocking and drops the hook's mechanics", () => {
    expect(body).not.toMatch(/will be \*?\*?blocked/);
    expect(body).toContain("must be **refused by you** (OpenClaw does not block it)");
    expect(body).toContain("Files outside this path must not be edited.");
    expect(body).not.toMatch(/hookSpecificOutput|The hook reads|ignores a top-level/);
    expect(skill.droppedFields).toContain("hooks");
    expect(skill.leftovers).toEqual([]);
  });
});
