import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rewriteProse, SKILL_CLOSE, SKILL_OPEN, TOOL_CLOSE, TOOL_OPEN } from "./rewrite-prose";

const context = { skillNames: new Set(["review", "qa", "ship"]), skillsRoot: "~/.openclaw/workspace/skills" };
const rewrite = (text: string) => rewriteProse(text, context, { spawnsSessions: false, plansOnly: false });
const code = (name: string) => `${TOOL_OPEN}${name}${TOOL_CLOSE}`;

describe("rewriteProse", () => {
  it.each([
    [
      "Use the AskUserQuestion tool to ask which branch to use.",
      "Ask the user in your chat reply which branch to use.",
    ],
    ["Use AskUserQuestion to ask the user for a name.", "Ask the user in your chat reply for a name."],
    [
      "then use AskUserQuestion with three options",
      "then ask the user in your chat reply with three options",
    ],
    ["Confirm via AskUserQuestion before pushing.", "Confirm in your chat reply before pushing."],
    ["Via AskUserQuestion, ask: which mode?", "In your chat reply, ask: which mode?"],
    [
      "Every AskUserQuestion is a decision brief and must be sent as tool_use, not prose — unless the fallback applies.",
      "Every question you ask the user is a decision brief and must be asked as its own question in your chat reply, not buried in other prose — unless the fallback applies.",
    ],
    [
      "If the section has findings, you MUST call AskUserQuestion as a tool_use — a finding is still a finding.",
      "If the section has findings, you MUST ask the user in your chat reply — a finding is still a finding.",
    ],
    [
      "The AskUserQuestion call is a tool_use, not prose — call the tool directly.",
      "The question to the user is asked in your chat reply as its own question — ask it directly.",
    ],
    [
      "Your VERY FIRST tool call MUST be AskUserQuestion, to confirm.",
      "Your VERY FIRST action MUST be to ask the user in your chat reply, to confirm.",
    ],
    [
      "Before calling ExitPlanMode, run the gate.",
      "Before presenting the plan for the user's approval, run the gate.",
    ],
    [
      "It verifies the report before ExitPlanMode is called.",
      "It verifies the report before you present the plan for the user's approval.",
    ],
    [
      "Subagents run in the background by default since Claude Code v2.1.198, so pass the flag.",
      "Subagents run in the background by default, so pass the flag.",
    ],
    ["Claude Code v2.1 added it.", "Claude Code v2.1 added it."],
    [
      "Disable it with `gstack-config set proactive false` or run gstack-slug.",
      "Disable it with `~/.openclaw/workspace/skills/gstack/bin/gstack-config set proactive false` or run ~/.openclaw/workspace/skills/gstack/bin/gstack-slug.",
    ],
    [
      "Emit ONE AskUserQuestion that lists every option. The AskUserQuestion call is a tool_use, not prose — write the question text and call the tool.",
      "Ask ONE question in your chat reply that lists every option. The question to the user is asked in your chat reply as its own question, not buried in other prose — write the question text in your chat reply.",
    ],
    [
      "Run the Claude CEO subagent, then compare Claude and Codex.",
      "Run the CEO sub-agent, then compare you and Codex.",
    ],
    [
      "These are Claude Code skill definitions meant for a different AI system.",
      "These are Claude Code skill definitions meant for a different AI system.",
    ],
    ["Each AskUserQuestion call names the branch.", "Every question you ask the user names the branch."],
    ["Batch them into one AskUserQuestion.", "Batch them into a question to the user."],
    ["Keep AskUserQuestion calls short.", "Keep questions to the user short."],
    ["AskUserQuestion: which one?", "Ask the user in your chat reply: which one?"],
    [`Stop and ${code("AskUserQuestion")}.`, "Stop and ask the user in your chat reply."],
    ["Any AskUserQuestion the skill fires counts.", "A question to the user the skill fires counts."],
    ["Before calling AskUserQuestion, check.", "Before asking the user in your chat reply, check."],
    ["If AskUserQuestion is unavailable, stop.", "If asking in your chat reply is unavailable, stop."],
    [
      "Applies to AskUserQuestion, replies and findings.",
      "Applies to questions to the user, replies and findings.",
    ],
    [
      "EXIT PLAN MODE GATE and the plan-mode check",
      "EXIT PLANNING-ONLY MODE GATE and the planning-only check",
    ],
    ["Use Grep to find all references.", "Use `grep` through the exec tool to find all references."],
    ["Values do not survive between Bash calls.", "Values do not survive between exec calls."],
    ["Use the Bash tool to run it.", "Use the exec tool to run it."],
    ["Run it with Bash.", "Run it with the exec tool."],
    ["Open it with the Read tool.", "Open it with the read tool."],
    [`Call ${code("Read")} on it.`, "Call the read tool on it."],
    [`Then ${code("Write")} the file.`, "Then `write` the file."],
    ["The Edit tool applies the fix.", "The edit tool applies the fix."],
    ["Search with WebSearch first.", "Search with the web_search tool first."],
    ["Fetch the page with WebFetch.", "Fetch the page with the web_fetch tool."],
    ["Use the Grep tool to find it.", "Use `grep` through the exec tool to find it."],
    ["Read, Write and Edit are allowed.", "`read`, `write` and `edit` are allowed."],
    ["Use the Agent tool for each flow.", "Use the sessions_spawn tool for each flow."],
    ["Spawn a fresh subagent per file.", "Spawn a fresh subagent (with the sessions_spawn tool) per file."],
    ["Use TodoWrite to track progress.", "Keep a checklist in your chat reply to track progress."],
    [
      "Call ExitPlanMode when done.",
      "Present the plan in your chat reply and wait for the user's approval when done.",
    ],
    ["Stay in plan mode.", "Stay in planning-only mode."],
    ["## Plan Mode", "## Planning-Only Mode"],
    ["Use EnterPlanMode first.", "Switch to planning-only mode first."],
    [
      "Use the Skill tool to invoke /review now.",
      "Read `~/.openclaw/workspace/skills/gstack-review/SKILL.md` and follow it now.",
    ],
    [
      `use the Skill tool to run the ${SKILL_OPEN}qa${SKILL_CLOSE} skill`,
      "read `~/.openclaw/workspace/skills/gstack-qa/SKILL.md` and follow it",
    ],
    ["Load it via the Skill tool.", "Load it by reading its SKILL.md and following it."],
    [`Recommend ${SKILL_OPEN}ship${SKILL_CLOSE} next.`, "Recommend `/gstack_ship` next."],
    ["Run /review, then /unknown.", "Run /gstack_review, then /unknown."],
    ["See CLAUDE.md and Claude Code docs.", "See AGENTS.md and OpenClaw docs."],
    ["Read ~/.claude/skills/gstack/qa/SKILL.md.", "Read ~/.openclaw/workspace/skills/gstack-qa/SKILL.md."],
  ])("%s", (input, expected) => {
    expect(rewrite(input)).toBe(expected);
  });

  it("leaves ordinary capitalised words alone", () => {
    expect(rewrite("Read the diff. Write a summary. Edit nothing. Task list: Agent Smith.")).toBe(
      "Read the diff. Write a summary. Edit nothing. Task list: Agent Smith.",
    );
  });

  it("leaves prose without Claude-only constructs byte for byte", () => {
    const words = fc.constantFrom(
      "Read",
      "the",
      "diff",
      "Write",
      "tests",
      "Edit",
      "carefully",
      "plan",
      "mode:",
      "ship",
      "review",
      "tool",
      "git",
      "push",
      "-",
      "*",
      "\n",
      "1.",
      "user",
      "Ask",
      "question",
      "Agent",
      "bash",
    );
    fc.assert(
      fc.property(fc.array(words, { maxLength: 40 }), (parts) => {
        const text = parts.join(" ");
        fc.pre(!/(Read|Write|Edit|Agent) tool|plan mode/i.test(text));
        expect(rewrite(text)).toBe(text);
      }),
    );
  });

  it("records that sessions_spawn and planning-only mode appear, for the notes", () => {
    const flags = { spawnsSessions: false, plansOnly: false };
    rewriteProse("Use the Agent tool. Stay in plan mode.", context, flags);
    expect(flags).toEqual({ spawnsSessions: true, plansOnly: true });
  });
});
