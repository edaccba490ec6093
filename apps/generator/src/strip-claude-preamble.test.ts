import { describe, expect, it } from "vitest";
import { stripClaudePreamble } from "./strip-claude-preamble";

const fence = (lines: string[]) => `\`\`\`bash\n${lines.join("\n")}\n\`\`\``;

describe("stripClaudePreamble", () => {
  it("drops telemetry lines and every later line that uses what they set, across blocks", () => {
    const body = [
      "## Start",
      "",
      fence(["_TEL=$(gstack-config get telemetry)", 'echo "TELEMETRY: $_TEL"', "git status"]),
      "",
      "## Later",
      "",
      fence(['_OUT="$_TEL-x"', 'echo "$_OUT"', "git log -1"]),
      "",
    ].join("\n");
    const { body: result } = stripClaudePreamble(body);
    expect(result).toBe(
      ["## Start", "", fence(["git status"]), "", "## Later", "", fence(["git log -1"]), ""].join("\n"),
    );
  });

  it("removes a whole if-block and continued lines, keeping the shell valid", () => {
    const body = fence([
      'if [ -n "$(~/.claude/skills/gstack/bin/gstack-update-check)" ]; then',
      '  if true; then echo "nested"; fi',
      '  echo "upgrade"',
      "fi",
      "touch ~/.gstack/sessions/$PPID \\",
      "  2>/dev/null",
      "echo kept",
    ]);
    expect(stripClaudePreamble(body).body).toBe(fence(["echo kept"]));
  });

  it("removes a code block left with nothing to run, and the blank line after it", () => {
    const body = `Intro.\n\n${fence(["# count sessions", "touch ~/.gstack/sessions/x"])}\n\nNext.\n`;
    const result = stripClaudePreamble(body);
    expect(result.body).toBe("Intro.\n\nNext.\n");
    expect(result.stripped).toEqual([{ kind: "code-block", summary: "# count sessions" }]);
  });

  it("drops a telemetry section up to the next heading of the same level", () => {
    const body = "## Telemetry (run last)\n\nLog it.\n\n### Details\n\nMore.\n\n## Done\n\nEnd.\n";
    expect(stripClaudePreamble(body).body).toBe("## Done\n\nEnd.\n");
  });

  it("drops gstack's behaviour patch for the Claude model family", () => {
    const body =
      "## Model-Specific Behavioral Patch (claude)\n\nPrefer dedicated tools.\n\n## Voice\n\nBe direct.\n";
    expect(stripClaudePreamble(body).body).toBe("## Voice\n\nBe direct.\n");
  });

  it("drops paragraphs and list items about removed values, keeping their neighbours", () => {
    const body = [
      fence(["_UPD=$(gstack-update-check)", "echo ok"]),
      "",
      "- If `_UPD` is set, tell the user.",
      "- Always greet the user.",
      "",
      "If `JUST_UPGRADED` appears, say so.",
      "",
      "Keep going.",
      "",
    ].join("\n");
    expect(stripClaudePreamble(body).body).toBe(
      [fence(["echo ok"]), "", "- Always greet the user.", "", "Keep going.", ""].join("\n"),
    );
  });

  it("does not touch non-shell code blocks or unrelated text", () => {
    const body = '```json\n{"telemetry_line": "gstack-update-check"}\n```\n\nPlain text.\n';
    expect(stripClaudePreamble(body).body).toBe(body);
  });

  it("removes the one-time telemetry question whole, from its condition to its closing line", () => {
    const body = [
      "If `TEL_PROMPTED` is `no` AND `LAKE_INTRO` is `yes`: ask telemetry once via AskUserQuestion:",
      "",
      "> Help gstack get better.",
      "",
      "Options:",
      "- A) Yes",
      "- B) No thanks",
      "",
      "If A: run `gstack-config set telemetry community`",
      "",
      fence(["touch ~/.gstack/.telemetry-prompted"]),
      "",
      "Skip if `TEL_PROMPTED` is `yes`.",
      "",
      "If `PROACTIVE_PROMPTED` is `no` AND `TEL_PROMPTED` is `yes`: ask once:",
      "",
      "> Let gstack suggest skills?",
      "",
    ].join("\n");
    expect(stripClaudePreamble(body).body).toBe(
      "If `PROACTIVE_PROMPTED` is `no`: ask once:\n\n> Let gstack suggest skills?\n",
    );
  });

  it("keeps the sentences of a paragraph that do not talk about the removed parts", () => {
    const body =
      'If output shows `JUST_UPGRADED <from> <to>`: print "updated". If `SPAWNED_SESSION` is true, skip feature discovery.\n';
    expect(stripClaudePreamble(body).body).toBe("If `SPAWNED_SESSION` is true, skip feature discovery.\n");
  });

  it("ends an introduction whose code block was removed instead of leaving it dangling", () => {
    const body = `**Eureka:** When it contradicts wisdom, name it and log:\n${fence(["echo x >> ~/.gstack/analytics/eureka.jsonl"])}\n\n## Next\n`;
    expect(stripClaudePreamble(body).body).toBe(
      "**Eureka:** When it contradicts wisdom, name it.\n\n## Next\n",
    );
  });

  it("keeps the timeline's completed event when the telemetry section goes", () => {
    const body = [
      "## Telemetry (run last)",
      "",
      "Log telemetry.",
      "",
      fence([
        "_TEL_END=$(date +%s)",
        `~/.claude/skills/gstack/bin/gstack-timeline-log '{"skill":"SKILL_NAME","event":"completed","outcome":"OUTCOME","duration_s":"'"$_TEL_DUR"'"}' 2>/dev/null || true`,
        "~/.claude/skills/gstack/bin/gstack-telemetry-log --skill x",
      ]),
      "",
      "## Next",
      "",
    ].join("\n");
    const result = stripClaudePreamble(body).body;
    expect(result).toContain("## Timeline (run last)");
    expect(result).toContain(
      `~/.claude/skills/gstack/bin/gstack-timeline-log '{"skill":"SKILL_NAME","event":"completed","outcome":"OUTCOME"}' 2>/dev/null || true`,
    );
    expect(result).not.toMatch(/telemetry-log|_TEL/);
    expect(result).toContain("## Next");
  });
});
