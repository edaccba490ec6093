import { describe, expect, it } from "vitest";
import { inferBins, inferRequiredBins } from "./infer-bins";

describe("inferBins", () => {
  it("requires programs run unconditionally in shell blocks, after pipes, && and $(", () => {
    const markdown =
      "```bash\nFOO=1 git status | jq .\n[ -x x ] && bun run build\nN=$(gh pr view)\nsudo docker ps # uses npm\n```\n";
    expect(inferRequiredBins(markdown)).toEqual(["bun", "docker", "gh", "git", "jq"]);
  });

  it("never requires what prose merely mentions in inline code, nor the browse binary", () => {
    expect(inferBins("Run `$B goto x` then `codex review`.\n")).toEqual({
      required: [],
      optional: ["codex"],
    });
    expect(inferBins("```bash\n$B goto https://example.com\n```\n").required).toEqual([]);
  });

  it("treats a guarded program or one run with a fallback as optional", () => {
    const markdown = [
      "```bash",
      "if command -v jq >/dev/null 2>&1; then",
      "  jq -r .name package.json",
      "fi",
      "gh pr view 2>/dev/null || echo none",
      "codex exec x || true",
      "git status",
      "```",
      "",
    ].join("\n");
    expect(inferBins(markdown)).toEqual({ required: ["git"], optional: ["codex", "gh", "jq"] });
  });

  it("a program required in one block is not also optional", () => {
    expect(inferBins("`gh pr list`\n\n```bash\ngh pr create\n```\n")).toEqual({
      required: ["gh"],
      optional: [],
    });
  });

  it("ignores prose, non-shell blocks and arguments", () => {
    expect(
      inferRequiredBins('Use git and gh.\n\n```json\n{"git": 1}\n```\n\n```bash\necho git\n```\n'),
    ).toEqual([]);
  });
});
