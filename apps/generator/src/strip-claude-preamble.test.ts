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
});
